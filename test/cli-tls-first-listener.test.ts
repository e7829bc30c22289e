import { test } from 'tap'
import { connect as tlsConnect } from 'node:tls'
import { startOrigin } from './helpers/servers'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { LOOPBACK_ORIGINS, portOf, startConfiguredServer } from './helpers/cli-server'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('server: a TLS first listener (Fastify\'s own https server) serves /healthz and CONNECT with proxy auth', async (t) => {
  const origin = await startOrigin(t)
  const dir = t.testdir()
  const tls = await makeSelfSignedCertificate(dir)
  const server = await startConfiguredServer(t, {
    listen: [{ host: '127.0.0.1', port: 0, tls: { cert: 'cert.pem', key: 'key.pem' } }],
    users: { alice: 's3cret' },
    destinations: LOOPBACK_ORIGINS
  }, dir)
  t.match(server.urls[0], /^https:\/\/127\.0\.0\.1:\d+$/)
  const exchange = (request: string): Promise<string> => new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: portOf(server.urls[0]), ca: tls.cert }, () => socket.write(request))
    let text = ''
    socket.on('data', (chunk: Buffer) => { text += chunk.toString() })
    socket.on('error', reject)
    socket.on('close', () => resolve(text))
  })
  t.match(await exchange('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'), /^HTTP\/1\.1 200 OK[^]*\{"status":"ok"\}$/)
  t.match(await exchange(`CONNECT 127.0.0.1:${origin.port} HTTP/1.1\r\nHost: x\r\n\r\n`), /^HTTP\/1\.1 407 /)
  const credentials = Buffer.from('alice:s3cret').toString('base64')
  const tunnel = await exchange(`CONNECT 127.0.0.1:${origin.port} HTTP/1.1\r\nHost: x\r\nProxy-Authorization: Basic ${credentials}\r\n\r\nGET /first-tls HTTP/1.1\r\nHost: o\r\nConnection: close\r\n\r\n`)
  t.match(tunnel, /^HTTP\/1\.1 200 Connection Established/)
  t.match(tunnel, /"url":"\/first-tls"/)
  t.equal(origin.requests.length, 1)
  await expectNothingDialedBefore(t, origin.accepts, 'only the authorized tunnel reached the origin', { after: 1 })
})

import { test } from 'tap'
import { connect as tlsConnect } from 'node:tls'
import { startOrigin } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { LOOPBACK_ORIGINS, portOf, startConfiguredServer } from './helpers/cli-server'

test('server: a second plain listener and a TLS listener (paths relative to the file) serve /healthz and CONNECT', async (t) => {
  const origin = await startOrigin(t)
  const dir = t.testdir()
  const tls = await makeSelfSignedCertificate(dir)
  const server = await startConfiguredServer(t, {
    listen: [{ host: '127.0.0.1', port: 0 }, { host: '127.0.0.1', port: 0 }, { host: '127.0.0.1', port: 0, tls: { cert: 'cert.pem', key: 'key.pem' } }],
    destinations: LOOPBACK_ORIGINS
  }, dir)
  t.equal(server.urls.length, 3)
  t.match(server.urls[1], /^http:\/\/127\.0\.0\.1:\d+$/)
  t.match(server.urls[2], /^https:\/\/127\.0\.0\.1:\d+$/)

  const second = await rawExchange(portOf(server.urls[1]), 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
  t.equal(second.status, 200)
  const viaSecond = await rawExchange(portOf(server.urls[1]), `CONNECT 127.0.0.1:${origin.port} HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: o\r\nConnection: close\r\n\r\n`)
  t.match(viaSecond.text, /^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 OK/)
  t.match(viaSecond.text, /"url":"\/second"/)

  const overTls = (request: string): Promise<string> => new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: portOf(server.urls[2]), ca: tls.cert }, () => socket.write(request))
    let text = ''
    socket.on('data', (chunk: Buffer) => { text += chunk.toString() })
    socket.on('error', reject)
    socket.on('close', () => resolve(text))
  })
  t.match(await overTls('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'), /^HTTP\/1\.1 200 OK[^]*\{"status":"ok"\}$/)
  const tunnel = await overTls(`CONNECT 127.0.0.1:${origin.port} HTTP/1.1\r\nHost: x\r\n\r\nGET /over-tls HTTP/1.1\r\nHost: o\r\nConnection: close\r\n\r\n`)
  t.match(tunnel, /^HTTP\/1\.1 200 Connection Established/)
  t.match(tunnel, /"url":"\/over-tls"/)
  t.equal(origin.requests.length, 2)
})

import { test } from 'tap'
import { connect as tlsConnect } from 'node:tls'
import { startOrigin } from './helpers/servers'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { LOOPBACK_ORIGINS, portOf, startConfiguredServer } from './helpers/cli-server'
import { connectHttp2Listener } from './helpers/cli-http2'
import { basic } from './helpers/raw-client'
import { http2Request } from './helpers/intercepted-client'

test('server: an "http2": true listener also serves HTTP/1.1 over TLS on the same port (CONNECT, /healthz, Host required), and /healthz over HTTP/2', async (t) => {
  const origin = await startOrigin(t)
  const dir = t.testdir()
  const tls = await makeSelfSignedCertificate(dir)
  const server = await startConfiguredServer(t, {
    listen: [{ host: '127.0.0.1', port: 0, tls: { cert: 'cert.pem', key: 'key.pem' }, http2: true }],
    users: { alice: 's3cret' },
    destinations: LOOPBACK_ORIGINS
  }, dir)
  // A client offering only http/1.1 in ALPN, as curl 7.88 does to a proxy.
  const overHttp1 = (request: string): Promise<string> => new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: portOf(server.urls[0]), ca: tls.cert, ALPNProtocols: ['http/1.1'] }, () => {
      t.equal(socket.alpnProtocol, 'http/1.1')
      socket.write(request)
    })
    let text = ''
    socket.on('data', (chunk: Buffer) => { text += chunk.toString() })
    socket.on('error', reject)
    socket.on('close', () => resolve(text))
  })
  t.match(await overHttp1('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'), /^HTTP\/1\.1 200 OK[^]*\{"status":"ok"\}$/)
  t.match(await overHttp1('GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n'), /^HTTP\/1\.1 400 /, 'HTTP/1.1 without Host: 400, as on every listener')
  t.match(await overHttp1(`CONNECT 127.0.0.1:${origin.port} HTTP/1.1\r\nHost: x\r\n\r\n`), /^HTTP\/1\.1 407 /)
  const tunnel = await overHttp1(`CONNECT 127.0.0.1:${origin.port} HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basic('alice', 's3cret')}\r\n\r\nGET /over-http1 HTTP/1.1\r\nHost: o\r\nConnection: close\r\n\r\n`)
  t.match(tunnel, /^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 OK/)
  t.match(tunnel, /"url":"\/over-http1"/)
  t.equal(origin.requests.length, 1)

  const session = await connectHttp2Listener(t, server.urls[0], tls.cert)
  const health = await http2Request(session, { ':path': '/healthz' })
  t.equal(health.status, 200)
  t.equal(health.body, '{"status":"ok"}')
})

import { test } from 'tap'
import { connect as tlsConnect } from 'node:tls'
import { startHttp2Proxy } from './helpers/http2-proxy'
import { startSentinel } from './helpers/servers'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('on the HTTP/2 TLS port: a CONNECT after a request on an HTTP/1.1 keep-alive connection gets 501 and nothing is dialed', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startHttp2Proxy(t, {}, (app) => { app.get('/healthz', async () => 'ok') })
  const text = await new Promise<string>((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: proxy.port, ca: proxy.tls.cert, ALPNProtocols: ['http/1.1'] }, () => {
      socket.write(`GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nCONNECT 127.0.0.1:${sentinel.port} HTTP/1.1\r\nHost: x\r\n\r\n`)
    })
    let received = ''
    socket.on('data', (chunk: Buffer) => { received += chunk.toString('latin1') })
    socket.on('error', reject)
    socket.on('close', () => resolve(received))
  })
  t.match(text, /^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\nok/, 'the keep-alive request is served first')
  const second = text.slice(text.indexOf('\r\n\r\nok') + 6)
  t.match(second, /^HTTP\/1\.1 501 Not Implemented\r\n[^]*Proxy-Status: fastify-forward-proxy; error=http_request_error/, 'then the CONNECT gets 501')
  await expectNothingDialedBefore(t, sentinel.accepts, 'the CONNECT target was never dialed')
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

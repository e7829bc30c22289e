import { test } from 'tap'
import { startProxy, startSentinel } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('a CONNECT pipelined behind a slow GET gets 501 only after the GET\'s response, in order, and nothing is dialed', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, {}, (app) => {
    app.get('/slow', async () => { await new Promise((resolve) => setTimeout(resolve, 100)); return 'slow-body' })
  })
  const res = await rawExchange(proxy.port, `GET /slow HTTP/1.1\r\nHost: x\r\n\r\nCONNECT 127.0.0.1:${sentinel.port} HTTP/1.1\r\nHost: x\r\n\r\n`)
  t.match(res.text, /^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\nslow-body/, 'the GET is answered first')
  const second = res.text.slice(res.text.indexOf('slow-body') + 'slow-body'.length)
  t.match(second, /^HTTP\/1\.1 501 Not Implemented\r\n[^]*Proxy-Status: fastify-forward-proxy; error=http_request_error/, 'then the CONNECT gets 501')
  await expectNothingDialedBefore(t, sentinel.accepts, 'the CONNECT target was never dialed')
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

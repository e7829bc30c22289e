import { test } from 'tap'
import { startProxy, startSentinel } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'

test('an origin that never answers gets 504 http_response_timeout after httpActivityTimeout', async (t) => {
  const silent = await startSentinel(t)
  const proxy = await startProxy(t, { limits: { httpActivityTimeout: 200 } })
  const started = Date.now()
  const res = await rawExchange(proxy.port, `GET http://127.0.0.1:${silent.port}/slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  t.equal(res.status, 504)
  t.match(res.text, /\r\nproxy-status: fastify-forward-proxy; error=http_response_timeout/i)
  t.ok(Date.now() - started >= 150, 'not before the configured timeout')
  t.equal(silent.connections.length, 1, 'the request did reach the silent origin')
  t.notMatch(res.text, /UND_ERR|\bat .+:\d+:\d+|Error:/, 'no internals or stack trace in the response')
})

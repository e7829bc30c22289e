import { test } from 'tap'
import { startProxy, startSentinel } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { capturedLog } from './helpers/captured-log'
import { eventually } from './helpers/eventually'

test('an origin that never answers gets 504 http_response_timeout after httpActivityTimeout; its access line names the address dialed', async (t) => {
  const silent = await startSentinel(t)
  const log = capturedLog()
  const proxy = await startProxy(t, { limits: { httpActivityTimeout: 200 } }, undefined, { logger: log.logger })
  const started = Date.now()
  const res = await rawExchange(proxy.port, `GET http://127.0.0.1:${silent.port}/slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  t.equal(res.status, 504)
  t.match(res.text, /\r\nproxy-status: fastify-forward-proxy; error=http_response_timeout/i)
  t.ok(Date.now() - started >= 150, 'not before the configured timeout')
  t.equal(silent.connections.length, 1, 'the request did reach the silent origin')
  t.notMatch(res.text, /UND_ERR|\bat .+:\d+:\d+|Error:/, 'no internals or stack trace in the response')
  await eventually(() => log.access().length === 1)
  t.match(log.access()[0], { status: 504, errorType: 'http_response_timeout', address: `127.0.0.1:${silent.port}` })
})

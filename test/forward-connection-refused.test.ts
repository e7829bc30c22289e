import { test } from 'tap'
import { closedPort } from './helpers/closed-port'
import { startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'

test('a refused connection gets 502 with Proxy-Status error=connection_refused', async (t) => {
  const port = await closedPort()
  const proxy = await startProxy(t)
  const res = await rawExchange(proxy.port, `GET http://127.0.0.1:${port}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  t.equal(res.status, 502)
  t.match(res.text, /\r\nproxy-status: fastify-forward-proxy; error=connection_refused\r\n/i)
  t.notMatch(res.text, /ECONNREFUSED|\bat .+:\d+:\d+|Error:/, 'no internals or stack trace in the response')
})

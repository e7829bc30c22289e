import { test } from 'tap'
import { startOrigin, startProxy } from './helpers/servers'
import { openTunnel, rawExchange } from './helpers/raw-client'
import { capturedLog } from './helpers/captured-log'
import { eventually } from './helpers/eventually'

test('access log: an IPv6 destination is written in brackets, [::1]:port, over http:// and CONNECT', async (t) => {
  const origin = await startOrigin(t, undefined, '::1')
  const log = capturedLog()
  const proxy = await startProxy(t, {}, undefined, { logger: log.logger })
  const answer = await rawExchange(proxy.port, `GET http://[::1]:${origin.port}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  t.equal(answer.status, 200)
  const tunnel = await openTunnel(proxy.port, `[0:0::1]:${origin.port}`)
  t.equal(tunnel.status, 200)
  tunnel.socket.destroy()
  await eventually(() => log.access().length === 2)
  t.same(log.access().map((entry) => entry.destination), [`[::1]:${origin.port}`, `[::1]:${origin.port}`])
})

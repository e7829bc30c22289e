import { test } from 'tap'
import { startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { blackHoledPort } from './helpers/black-holed-port'

test('connection_timeout: a destination that never accepts gets 504 within connectTimeout', async (t) => {
  const port = await blackHoledPort(t)
  const proxy = await startProxy(t, { limits: { connectTimeout: 300 } })
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${port}`)
  t.equal(tunnel.status, 504)
  t.match(tunnel.head, /error=connection_timeout/)
  tunnel.socket.destroy()
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

import { test } from 'tap'
import { createServer, type AddressInfo } from 'node:net'
import { startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'

test('connection_refused: nothing listening at the destination gets 502', async (t) => {
  const closed = createServer()
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
  const port = (closed.address() as AddressInfo).port
  await new Promise<void>((resolve) => closed.close(() => resolve()))
  const proxy = await startProxy(t)
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${port}`)
  t.equal(tunnel.status, 502)
  t.match(tunnel.head, /error=connection_refused/)
  tunnel.socket.destroy()
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

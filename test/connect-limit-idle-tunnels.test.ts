import { test } from 'tap'
import { startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { once, startTcpDestination } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'

test('maxConcurrentTunnels + 1 idle tunnels: the extra one gets 503, the idle ones close at tunnelIdleTimeout, the gauge returns to 0', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t, { limits: { maxConcurrentTunnels: 2, tunnelIdleTimeout: 200 } })
  const idle = [await openTunnel(proxy.port, `127.0.0.1:${destination.port}`), await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)]
  const closed = idle.map((tunnel) => once(tunnel.socket, 'close'))
  const extra = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  t.equal(extra.status, 503)
  t.match(extra.head, /\r\nproxy-status: fastify-forward-proxy; error=connection_limit_reached/i)
  extra.socket.destroy()
  t.equal(proxy.app.forwardProxy.activeTunnels, 2)

  await Promise.all(closed)
  t.pass('both idle tunnels were closed by the proxy')
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
  const next = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  t.equal(next.status, 200, 'a freed slot is usable again')
  next.socket.destroy()
})

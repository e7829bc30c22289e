import { test } from 'tap'
import { startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { startTcpDestination } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'

test('maxConcurrentTunnels: the tunnel beyond the limit gets 503 connection_limit_reached; a freed slot is reused', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t, { limits: { maxConcurrentTunnels: 2 } })
  const first = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  const second = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  const third = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  t.same([first.status, second.status, third.status], [200, 200, 503])
  t.match(third.head, /proxy-status: fastify-forward-proxy; error=connection_limit_reached/i)
  third.socket.destroy()
  first.socket.resetAndDestroy()
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 1)
  const fourth = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  t.equal(fourth.status, 200)
  second.socket.destroy()
  fourth.socket.destroy()
})

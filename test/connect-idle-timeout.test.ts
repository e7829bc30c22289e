import { test } from 'tap'
import { startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { once, startTcpDestination } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'

test('tunnel relay: an idle tunnel closes after tunnelIdleTimeout and its slot is released', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t, { limits: { tunnelIdleTimeout: 200 } })
  // Taken before the tunnel opens, so a slow machine can only make the measured time longer.
  const started = Date.now()
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  const upstream = await destination.nextConnection()
  t.equal(proxy.app.forwardProxy.activeTunnels, 1)
  await Promise.all([once(tunnel.socket, 'close'), once(upstream, 'end')])
  t.ok(Date.now() - started >= 195, 'not before the idle timeout')
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

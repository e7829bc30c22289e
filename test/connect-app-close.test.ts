import { test } from 'tap'
import { startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { once, startTcpDestination } from './helpers/tcp-destination'

test('fastify.close() with an open tunnel completes promptly and destroys the tunnel on both sides', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t)
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  const upstream = await destination.nextConnection()
  const clientClosed = once(tunnel.socket, 'close')
  const upstreamEnded = once(upstream, 'end')
  tunnel.socket.resume()
  const started = Date.now()
  await proxy.app.close()
  await Promise.all([clientClosed, upstreamEnded])
  const elapsed = Date.now() - started
  t.ok(elapsed < 1000, `closed in ${elapsed} ms, not after the 5-minute default idle timeout`)
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

import { test } from 'tap'
import { startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { once, startTcpDestination } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'

test('tunnel relay: when the client destroys its socket the destination sees EOF, and the tunnel is torn down when it answers', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t)
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  const upstream = await destination.nextConnection()
  const ended = once(upstream, 'end')
  const closed = once(upstream, 'close')
  tunnel.socket.destroy()
  await ended
  t.pass('the destination saw EOF (TCP cannot tell a closed client from a half-close yet)')
  // The client is gone: what the destination sends now is refused by the client's kernel,
  // and the proxy tears the destination connection down.
  const writer = setInterval(() => { if (!upstream.destroyed) upstream.write('late reply') }, 20)
  t.teardown(() => clearInterval(writer))
  await closed
  clearInterval(writer)
  t.pass('the destination connection closed')
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

import { test } from 'tap'
import { startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { once, readAll, startTcpDestination } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'

test('tunnel relay: half-close is carried across and the reply after it still arrives', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t)
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  const upstream = await destination.nextConnection()
  const received = readAll(upstream)
  const clientReceived = readAll(tunnel.socket)
  const clientClosed = once(tunnel.socket, 'close')
  tunnel.socket.end('question')
  t.equal(await received, 'question', 'the destination got the bytes, then EOF')
  upstream.end('answer after the client finished sending')
  t.equal(await clientReceived, 'answer after the client finished sending')
  await clientClosed
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

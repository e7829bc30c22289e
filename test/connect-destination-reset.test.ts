import { test } from 'tap'
import { startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { startTcpDestination } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'

test('tunnel relay: a destination reset tears down the client side', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t)
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  const upstream = await destination.nextConnection()
  const aborted = new Promise<string | undefined>((resolve) => tunnel.socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code)))
  upstream.resetAndDestroy()
  t.equal(await aborted, 'ECONNRESET', 'the client sees an abort, not a clean end')
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

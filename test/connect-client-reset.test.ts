import { test } from 'tap'
import { startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { once, startTcpDestination } from './helpers/tcp-destination'

test('tunnel relay: a client reset closes the destination connection; a client FIN reaches it as EOF', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t)
  const reset = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  const first = await destination.nextConnection()
  const aborted = new Promise<string | undefined>((resolve) => first.once('error', (error: NodeJS.ErrnoException) => resolve(error.code)))
  reset.socket.resetAndDestroy()
  t.equal(await aborted, 'ECONNRESET', 'the client reset reaches the destination as a reset, not a clean end')

  const finished = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  const second = await destination.nextConnection()
  const ended = once(second, 'end')
  const finishedClosed = once(finished.socket, 'close')
  finished.socket.end()
  await ended
  t.pass('the destination saw EOF after the client FIN (half-close, not an abort)')
  second.end()
  await finishedClosed
})

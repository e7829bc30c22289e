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

test('tunnel relay: an idle tunnel closes after tunnelIdleTimeout and its slot is released', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t, { limits: { tunnelIdleTimeout: 200 } })
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  const upstream = await destination.nextConnection()
  t.equal(proxy.app.forwardProxy.activeTunnels, 1)
  const started = Date.now()
  await Promise.all([once(tunnel.socket, 'close'), once(upstream, 'end')])
  t.ok(Date.now() - started >= 150, 'not before the idle timeout')
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

test('tunnel relay: traffic keeps a tunnel open past tunnelIdleTimeout', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t, { limits: { tunnelIdleTimeout: 300 } })
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  const upstream = await destination.nextConnection()
  upstream.on('data', (chunk: Buffer) => upstream.write(chunk))
  for (let i = 0; i < 8; i++) {
    tunnel.socket.write(`ping ${i}`)
    await new Promise<void>((resolve) => tunnel.socket.once('data', () => resolve()))
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  t.notOk(tunnel.socket.destroyed, 'still open after 800 ms of traffic with a 300 ms idle timeout')
  tunnel.socket.destroy()
})

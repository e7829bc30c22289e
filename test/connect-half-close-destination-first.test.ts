import { test } from 'tap'
import { connect } from 'node:net'
import { startProxy } from './helpers/servers'
import { once, readAll, startTcpDestination } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'

test('tunnel relay: a destination that finishes first (FIN) still receives what the client sends afterwards', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t)
  // allowHalfOpen: the client keeps its sending half open after the destination's EOF.
  const client = connect({ port: proxy.port, host: '127.0.0.1', allowHalfOpen: true })
  client.on('error', () => {})
  t.teardown(() => client.destroy())
  client.write(`CONNECT 127.0.0.1:${destination.port} HTTP/1.1\r\nHost: x\r\n\r\n`)
  const upstream = await destination.nextConnection()
  const clientReceived = readAll(client)
  const destinationReceived = readAll(upstream)
  upstream.end('banner then EOF')
  t.equal(await clientReceived, 'HTTP/1.1 200 Connection Established\r\n\r\nbanner then EOF', 'the client got the bytes, then EOF')
  t.notOk(client.destroyed, 'the client side is still open for sending')
  const clientClosed = once(client, 'close')
  client.end('client data after the destination finished')
  t.equal(await destinationReceived, 'client data after the destination finished')
  await clientClosed
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

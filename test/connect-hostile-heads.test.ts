import { test } from 'tap'
import { connect } from 'node:net'
import { startProxy, startSentinel } from './helpers/servers'
import { openTunnel, rawExchange } from './helpers/raw-client'

test('CONNECT heads: a truncated head, an oversized head and a head never finished are closed without a crash or a leaked tunnel', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, {}, undefined, { connectionTimeout: 300 })

  const truncated = connect(proxy.port, '127.0.0.1')
  truncated.on('error', () => {})
  truncated.resume()
  truncated.end(`CONNECT 127.0.0.1:${sentinel.port} HTTP/1.1\r\nHost: x\r\nX-Half: `)
  await new Promise<void>((resolve) => truncated.on('close', () => resolve()))

  const oversized = await rawExchange(proxy.port, `CONNECT 127.0.0.1:${sentinel.port} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`)
  t.equal(oversized.status, 431, 'an oversized head gets 431')

  const stalled = connect(proxy.port, '127.0.0.1')
  stalled.on('error', () => {})
  stalled.resume()
  stalled.write(`CONNECT 127.0.0.1:${sentinel.port} HTTP/1.1\r\nHost: x\r\n`)
  const started = Date.now()
  await new Promise<void>((resolve) => stalled.on('close', () => resolve()))
  t.ok(Date.now() - started >= 250, 'a client that never finishes its head is closed by the server timeout')

  t.equal(sentinel.connections.length, 0)
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
  const healthy = await openTunnel(proxy.port, `127.0.0.1:${sentinel.port}`)
  t.equal(healthy.status, 200, 'still serving after the hostile heads')
  healthy.socket.destroy()
})

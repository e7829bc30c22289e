import { test } from 'tap'
import { createServer } from 'node:http'
import { connect } from 'node:net'
import { startProxy, startSentinel } from './helpers/servers'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('a CONNECT head dripped one byte at a time is closed at the server headersTimeout, never dialed', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, {}, undefined, {
    serverFactory: (handler) => createServer({ headersTimeout: 300, requestTimeout: 600, connectionsCheckingInterval: 50 }, handler)
  })
  const head = `CONNECT 127.0.0.1:${sentinel.port} HTTP/1.1\r\nHost: x\r\nX-Pad: ${'a'.repeat(200)}\r\n\r\n`
  const socket = connect(proxy.port, '127.0.0.1')
  socket.on('error', () => {})
  t.teardown(() => socket.destroy())
  let received = ''
  socket.on('data', (chunk: Buffer) => { received += chunk.toString() })
  // One byte every 20 ms keeps the socket busy (no inactivity timeout) but needs ~5 s for the head.
  let sent = 0
  const drip = setInterval(() => { if (sent < head.length && !socket.destroyed) socket.write(head[sent++] ?? '') }, 20)
  t.teardown(() => clearInterval(drip))
  const started = Date.now()
  await new Promise((resolve) => socket.once('close', resolve))
  clearInterval(drip)
  const elapsed = Date.now() - started
  t.ok(elapsed >= 250 && elapsed < 2000, `closed after ${elapsed} ms`)
  t.ok(sent < head.length, `closed before the head was complete (${sent} of ${head.length} bytes)`)
  t.match(received, /^(HTTP\/1\.1 408 |$)/, 'a 408 or a bare close, never a 200')
  await expectNothingDialedBefore(t, sentinel.accepts, 'the CONNECT target was never dialed')
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

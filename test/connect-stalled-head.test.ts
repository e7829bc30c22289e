import { test } from 'tap'
import { connect } from 'node:net'
import { startProxy, startSentinel } from './helpers/servers'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('a client that never finishes its CONNECT head is closed by the server timeout (Fastify connectionTimeout 300 ms), never dialed', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, {}, undefined, { connectionTimeout: 300 })
  const stalled = connect(proxy.port, '127.0.0.1')
  stalled.on('error', () => {})
  t.teardown(() => stalled.destroy())
  stalled.resume()
  stalled.write(`CONNECT 127.0.0.1:${sentinel.port} HTTP/1.1\r\nHost: x\r\n`)
  const started = Date.now()
  await new Promise<void>((resolve) => stalled.on('close', () => resolve()))
  const elapsed = Date.now() - started
  t.ok(elapsed >= 250 && elapsed < 3000, `closed after ${elapsed} ms`)
  await expectNothingDialedBefore(t, sentinel.accepts, 'the CONNECT target was never dialed')
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

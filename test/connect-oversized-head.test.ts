import { test } from 'tap'
import { startProxy, startSentinel } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('a CONNECT head over 16 KiB gets 431 and is never dialed', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t)
  const oversized = await rawExchange(proxy.port, `CONNECT 127.0.0.1:${sentinel.port} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`)
  t.equal(oversized.status, 431)
  await expectNothingDialedBefore(t, sentinel.accepts, 'the CONNECT target was never dialed')
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

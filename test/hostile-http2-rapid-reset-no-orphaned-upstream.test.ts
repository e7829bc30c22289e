import { test } from 'tap'
import { startBundledHttp2 } from './helpers/bundled-http2'
import { startCountingDestination } from './helpers/counting-destination'
import { eventually } from './helpers/eventually'
import { FLAG, FRAME, connectRawHttp2, frame, headerBlock, rstStream } from './helpers/raw-http2'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

/** HEADERS of a CONNECT to `authority` immediately followed by RST_STREAM CANCEL, for `count` streams. */
function cancelledConnects (authority: string, count: number): Buffer {
  const block = headerBlock([[':method', 'CONNECT'], [':authority', authority]])
  const frames: Buffer[] = []
  for (let index = 0; index < count; index++) {
    const streamId = 1 + 2 * index
    frames.push(frame(FRAME.HEADERS, FLAG.END_HEADERS, streamId, block), rstStream(streamId))
  }
  return Buffer.concat(frames)
}

test('rapid reset (CVE-2023-44487): 2,000 cancelled CONNECT streams get a GOAWAY, every upstream socket closed, no slot held', async (t) => {
  const destination = await startCountingDestination(t)
  const proxy = await startBundledHttp2(t)
  const attacker = await connectRawHttp2(proxy.port, proxy.ca)
  attacker.socket.write(cancelledConnects(`127.0.0.1:${destination.port}`, 2000))
  await attacker.frameMatching((received) => received.type === FRAME.GOAWAY)
  t.pass('the attacking connection got a GOAWAY')
  await eventually(() => destination.open === 0 && proxy.server.app.forwardProxy.activeTunnels === 0, 10_000)
  t.ok(destination.accepted < 2000, `the attack was cut short: ${destination.accepted} of 2000 streams dialed, all closed again`)
  t.equal(await proxy.tunnelStatus(`127.0.0.1:${destination.port}`), 200, 'a new client still gets its tunnel')
  attacker.socket.destroy()
})

test('over HTTP/2 (Envoy CVE-2021-43826): CONNECT streams cancelled right after their HEADERS are never dialed, leave no upstream socket open and no tunnel slot taken', async (t) => {
  const destination = await startCountingDestination(t)
  const proxy = await startBundledHttp2(t)
  const attacker = await connectRawHttp2(proxy.port, proxy.ca)
  // 100 is as many early resets as limits.maxStreamResets allows by default: the streams are
  // served, and each is cancelled before the proxy gets to dial it.
  attacker.socket.write(cancelledConnects(`127.0.0.1:${destination.port}`, 100))
  // The server acknowledges a PING only after it has read every frame sent before it.
  attacker.socket.write(frame(FRAME.PING, 0, 0, Buffer.from('pingpong')))
  await attacker.frameMatching((received) => received.type === FRAME.PING && (received.flags & FLAG.ACK) !== 0)
  await eventually(() => proxy.server.app.forwardProxy.activeTunnels === 0, 10_000)
  t.equal(attacker.goawayCode(), undefined, 'the connection itself was not refused')
  t.equal(await proxy.tunnelStatus(`127.0.0.1:${destination.port}`), 200, 'the server serves on')
  await expectNothingDialedBefore(t, destination.accepts, 'the only connection the destination got is the new client\'s tunnel', { after: 1 })
  attacker.socket.destroy()
})

import { test } from 'tap'
import { constants } from 'node:http2'
import { startBundledHttp2 } from './helpers/bundled-http2'
import { startCountingDestination } from './helpers/counting-destination'
import { eventually } from './helpers/eventually'
import { within } from './helpers/within'
import { FLAG, FRAME, connectRawHttp2, frame, headerBlock, rstStream, type RawHttp2Connection } from './helpers/raw-http2'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'
import { startHttp2Proxy } from './helpers/http2-proxy'
import { capturedLog } from './helpers/captured-log'

/** HEADERS of a CONNECT to `authority` immediately followed by RST_STREAM CANCEL, on streams from `firstStreamId`. */
function cancelledConnects (authority: string, count: number, firstStreamId = 1): Buffer {
  const block = headerBlock([[':method', 'CONNECT'], [':authority', authority]])
  const frames: Buffer[] = []
  for (let index = 0; index < count; index++) {
    const streamId = firstStreamId + 2 * index
    frames.push(frame(FRAME.HEADERS, FLAG.END_HEADERS, streamId, block), rstStream(streamId))
  }
  return Buffer.concat(frames)
}

/** Resolves once the server has read everything sent before (it acknowledges a PING only then). */
async function pingAcknowledged (attacker: RawHttp2Connection, data: string): Promise<void> {
  attacker.socket.write(frame(FRAME.PING, 0, 0, Buffer.from(data)))
  await attacker.frameMatching((received) => received.type === FRAME.PING && (received.flags & FLAG.ACK) !== 0 && received.payload.toString() === data)
}

test('attacker\'s review 6: 1,000 CONNECT streams reset before their answer get GOAWAY ENHANCE_YOUR_CALM after limits.maxStreamResets (default 100), nothing dialed', async (t) => {
  const destination = await startCountingDestination(t)
  const proxy = await startBundledHttp2(t)
  const attacker = await connectRawHttp2(proxy.port, proxy.ca)
  attacker.socket.write(cancelledConnects(`127.0.0.1:${destination.port}`, 1000))
  const goaway = await within(attacker.frameMatching((received) => received.type === FRAME.GOAWAY), 'a GOAWAY')
  t.equal(goaway.payload.readUInt32BE(4), constants.NGHTTP2_ENHANCE_YOUR_CALM, 'the GOAWAY says ENHANCE_YOUR_CALM')
  await within(attacker.closed, 'the close of the attacking connection')
  t.pass('the attacking connection was closed')
  await eventually(() => proxy.server.app.forwardProxy.activeTunnels === 0)
  t.equal(await proxy.tunnelStatus(`127.0.0.1:${destination.port}`), 200, 'a new client still gets its tunnel')
  await expectNothingDialedBefore(t, destination.accepts, 'the only connection the destination got is the new client\'s tunnel', { after: 1 })
})

test('attacker\'s review 6: limits.maxStreamResets is the number of early resets a connection may make in 10 s; one more closes it', async (t) => {
  const destination = await startCountingDestination(t)
  const proxy = await startBundledHttp2(t, { limits: { maxStreamResets: 5 } })
  const attacker = await connectRawHttp2(proxy.port, proxy.ca)
  const authority = `127.0.0.1:${destination.port}`
  attacker.socket.write(cancelledConnects(authority, 5))
  await pingAcknowledged(attacker, 'fiveless')
  await eventually(() => proxy.server.app.forwardProxy.activeTunnels === 0)
  t.equal(attacker.goawayCode(), undefined, 'five early resets are allowed')
  attacker.socket.write(cancelledConnects(authority, 1, 11))
  const goaway = await within(attacker.frameMatching((received) => received.type === FRAME.GOAWAY), 'a GOAWAY')
  t.equal(goaway.payload.readUInt32BE(4), constants.NGHTTP2_ENHANCE_YOUR_CALM, 'the sixth gets GOAWAY ENHANCE_YOUR_CALM')
  await within(attacker.closed, 'the close of the attacking connection')
  await expectNothingDialedBefore(t, destination.accepts, 'nothing was dialed for the reset streams')
})

test('attacker\'s review 6: streams reset after their answer (a client changing its mind) do not count toward limits.maxStreamResets', async (t) => {
  const destination = await startCountingDestination(t)
  const proxy = await startBundledHttp2(t, { limits: { maxStreamResets: 2 } })
  const attacker = await connectRawHttp2(proxy.port, proxy.ca)
  const block = headerBlock([[':method', 'CONNECT'], [':authority', `127.0.0.1:${destination.port}`]])
  for (let index = 0; index < 6; index++) {
    const streamId = 1 + 2 * index
    attacker.socket.write(frame(FRAME.HEADERS, FLAG.END_HEADERS, streamId, block))
    await attacker.frameMatching((received) => received.type === FRAME.HEADERS && received.streamId === streamId)
    attacker.socket.write(rstStream(streamId))
  }
  await pingAcknowledged(attacker, 'answered')
  await eventually(() => proxy.server.app.forwardProxy.activeTunnels === 0)
  t.equal(attacker.goawayCode(), undefined, 'six answered-then-reset tunnels leave the connection open')
  t.equal(destination.accepted, 6, 'each was a real tunnel')
  attacker.socket.destroy()
})

test('a connection closed for rapid reset leaves one warning naming its client and why, for the operator under attack', async (t) => {
  const destination = await startCountingDestination(t)
  const log = capturedLog()
  log.logger.level = 'warn'
  const proxy = await startHttp2Proxy(t, { limits: { maxStreamResets: 5 } }, undefined, {}, log.logger)
  const attacker = await connectRawHttp2(proxy.port, proxy.tls.cert)
  attacker.socket.write(cancelledConnects(`127.0.0.1:${destination.port}`, 50))
  await within(attacker.closed, 'the close of the attacking connection')
  await eventually(() => log.lines().some((line) => line.includes('rapid reset')))
  const warnings = log.lines().map((line) => JSON.parse(line) as { level: number, msg: string, http2?: { client: string, resets: number } }).filter((entry) => entry.msg.includes('rapid reset'))
  t.equal(warnings.length, 1, 'one line per closed connection')
  t.match(warnings[0], { level: 40, http2: { client: '127.0.0.1', resets: 6 } })
})

import { test } from 'tap'
import { startBundledHttp2 } from './helpers/bundled-http2'
import { startCountingDestination } from './helpers/counting-destination'
import { eventually } from './helpers/eventually'
import { FLAG, FRAME, connectRawHttp2, frame, headerBlock } from './helpers/raw-http2'
import { HTTP2_MAX_CONCURRENT_STREAMS } from './helpers/internals'

const REFUSED_STREAM = 0x7
const PROTOCOL_ERROR = 0x1

test('stream flood: CONNECT streams beyond the 100 one HTTP/2 connection may hold are refused with REFUSED_STREAM and never dialed; closing the connection frees every tunnel', async (t) => {
  const destination = await startCountingDestination(t)
  const proxy = await startBundledHttp2(t)
  const attacker = await connectRawHttp2(proxy.port, proxy.ca)
  const block = headerBlock([[':method', 'CONNECT'], [':authority', `127.0.0.1:${destination.port}`]])
  const extra = 50
  attacker.socket.write(Buffer.concat(Array.from(
    { length: HTTP2_MAX_CONCURRENT_STREAMS + extra },
    (_, index) => frame(FRAME.HEADERS, FLAG.END_HEADERS, 1 + 2 * index, block)
  )))

  await eventually(() => destination.accepted === HTTP2_MAX_CONCURRENT_STREAMS &&
    attacker.frames.filter((received) => received.type === FRAME.RST_STREAM).length === extra, 10_000)
  const refused = attacker.frames.filter((received) => received.type === FRAME.RST_STREAM)
  t.same([...new Set(refused.map((received) => received.payload.readUInt32BE(0)))], [REFUSED_STREAM], 'every extra stream got REFUSED_STREAM')
  t.ok(refused.every((received) => received.streamId > 2 * HTTP2_MAX_CONCURRENT_STREAMS), 'only the streams beyond the maximum were refused')
  t.equal(proxy.server.app.forwardProxy.activeTunnels, HTTP2_MAX_CONCURRENT_STREAMS, 'one connection holds at most 100 tunnels')
  t.equal(await proxy.tunnelStatus(`127.0.0.1:${destination.port}`), 200, 'another client still gets a tunnel')

  attacker.socket.destroy()
  await eventually(() => destination.open === 0 && proxy.server.app.forwardProxy.activeTunnels === 0, 10_000)
  t.pass('every tunnel of the connection was released when it closed')
})

test('stream flood after the client acknowledged the limit: the stream beyond 100 is never dialed, and the connection is closed (GOAWAY PROTOCOL_ERROR), its tunnels released', async (t) => {
  const destination = await startCountingDestination(t)
  const proxy = await startBundledHttp2(t)
  const attacker = await connectRawHttp2(proxy.port, proxy.ca)
  // The helper acknowledges the server's SETTINGS as they come; a PING answered after that
  // acknowledgement shows the server has read it.
  await attacker.frameMatching((received) => received.type === FRAME.SETTINGS && (received.flags & FLAG.ACK) === 0)
  attacker.socket.write(frame(FRAME.PING, 0, 0, Buffer.alloc(8)))
  await attacker.frameMatching((received) => received.type === FRAME.PING && (received.flags & FLAG.ACK) !== 0)
  const block = headerBlock([[':method', 'CONNECT'], [':authority', `127.0.0.1:${destination.port}`]])
  attacker.socket.write(Buffer.concat(Array.from(
    { length: HTTP2_MAX_CONCURRENT_STREAMS },
    (_, index) => frame(FRAME.HEADERS, FLAG.END_HEADERS, 1 + 2 * index, block)
  )))
  await eventually(() => destination.accepted === HTTP2_MAX_CONCURRENT_STREAMS, 10_000)
  attacker.socket.write(frame(FRAME.HEADERS, FLAG.END_HEADERS, 1 + 2 * HTTP2_MAX_CONCURRENT_STREAMS, block))
  await attacker.closed
  // Node 22 and 24 say why (GOAWAY PROTOCOL_ERROR); Node 20's HTTP/2 layer drops the connection without a GOAWAY.
  const expected = Number(process.versions.node.split('.')[0]) >= 22 ? PROTOCOL_ERROR : undefined
  t.equal(attacker.goawayCode(), expected, 'the connection closed, with GOAWAY PROTOCOL_ERROR on Node 22 and later')
  await eventually(() => destination.open === 0 && proxy.server.app.forwardProxy.activeTunnels === 0, 10_000)
  t.equal(destination.accepted, HTTP2_MAX_CONCURRENT_STREAMS, 'the stream beyond the limit was never dialed')
})

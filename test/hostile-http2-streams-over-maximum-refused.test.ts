import { test } from 'tap'
import { startBundledHttp2 } from './helpers/bundled-http2'
import { startCountingDestination } from './helpers/counting-destination'
import { eventually } from './helpers/eventually'
import { FLAG, FRAME, connectRawHttp2, frame, headerBlock } from './helpers/raw-http2'
import { HTTP2_MAX_CONCURRENT_STREAMS } from './helpers/internals'

const REFUSED_STREAM = 0x7

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

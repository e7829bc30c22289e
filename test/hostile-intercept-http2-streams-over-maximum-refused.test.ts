import { test } from 'tap'
import type { ServerResponse } from 'node:http'
import { makeInterceptionPki } from './helpers/interception-pki'
import { interceptAll, startInterceptingProxy, startTlsOrigin } from './helpers/intercepting-proxy'
import { openInterceptedTls } from './helpers/intercepted-client'
import { FLAG, FRAME, frame, headerBlock, rawHttp2Over } from './helpers/raw-http2'
import { eventually } from './helpers/eventually'
import { HTTP2_MAX_CONCURRENT_STREAMS } from './helpers/internals'

const REFUSED_STREAM = 0x7
const SETTINGS_MAX_CONCURRENT_STREAMS = 0x3

test('inside an intercepted tunnel, one HTTP/2 connection holds at most 100 streams: it is advertised, and the requests beyond it are refused with REFUSED_STREAM and never forwarded', async (t) => {
  const pki = await makeInterceptionPki(t)
  const held: ServerResponse[] = []
  const origin = await startTlsOrigin(t, pki, (_req, res) => { held.push(res) })
  t.teardown(() => held.forEach((res) => res.destroy()))
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  const authority = `127.0.0.1:${origin.port}`
  const client = rawHttp2Over(await openInterceptedTls(t, proxy.port, authority, { ca: pki.operatorCa.cert, alpn: ['h2'] }))

  // A client that does not wait for the limit: 150 requests at once, sent with its preface.
  const extra = 50
  const block = headerBlock([[':method', 'GET'], [':scheme', 'https'], [':path', '/held'], [':authority', authority]])
  client.socket.write(Buffer.concat(Array.from(
    { length: HTTP2_MAX_CONCURRENT_STREAMS + extra },
    (_, index) => frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1 + 2 * index, block)
  )))
  const settings = await client.frameMatching((received) => received.type === FRAME.SETTINGS && (received.flags & FLAG.ACK) === 0)
  const advertised = new Map<number, number>()
  for (let at = 0; at + 6 <= settings.payload.length; at += 6) advertised.set(settings.payload.readUInt16BE(at), settings.payload.readUInt32BE(at + 2))
  t.equal(advertised.get(SETTINGS_MAX_CONCURRENT_STREAMS), HTTP2_MAX_CONCURRENT_STREAMS, 'the limit is advertised')
  await eventually(() => held.length === HTTP2_MAX_CONCURRENT_STREAMS &&
    client.frames.filter((received) => received.type === FRAME.RST_STREAM).length === extra, 10_000)
  const refused = client.frames.filter((received) => received.type === FRAME.RST_STREAM)
  t.same([...new Set(refused.map((received) => received.payload.readUInt32BE(0)))], [REFUSED_STREAM], 'every extra stream got REFUSED_STREAM')
  t.ok(refused.every((received) => received.streamId > 2 * HTTP2_MAX_CONCURRENT_STREAMS), 'only the streams beyond the maximum were refused')
  t.equal(origin.requests.length, HTTP2_MAX_CONCURRENT_STREAMS, 'the destination got only the streams within the maximum')
})

import { test } from 'tap'
import { startHttp2Proxy } from './helpers/http2-proxy'
import { startCountingDestination } from './helpers/counting-destination'
import { FLAG, FRAME, connectRawHttp2, frame, headerBlock, type RawHttp2Connection, type ReceivedFrame } from './helpers/raw-http2'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const PROTOCOL_ERROR = 0x1
// HPACK static table entries 8 and 12 are ":status 200" and ":status 400"; Node's encoder uses them.
const STATUS_200 = 0x88
const STATUS_400 = 0x8c

/** Waits for the server's verdict on `streamId`: its RST_STREAM code, or its response's first header byte. */
async function verdict (connection: RawHttp2Connection, streamId: number): Promise<{ reset: number } | { status200: boolean, status400: boolean }> {
  const answer: ReceivedFrame = await connection.frameMatching((received) =>
    received.streamId === streamId && (received.type === FRAME.RST_STREAM || received.type === FRAME.HEADERS))
  return answer.type === FRAME.RST_STREAM
    ? { reset: answer.payload.readUInt32BE(0) }
    : { status200: answer.payload[0] === STATUS_200, status400: answer.payload[0] === STATUS_400 }
}

test('Malformed HTTP/2 CONNECT streams (pseudo-headers, framing headers, a body) are reset or refused, never dialed', async (t) => {
  const destination = await startCountingDestination(t)
  const proxy = await startHttp2Proxy(t)
  const connection = await connectRawHttp2(proxy.port, proxy.tls.cert)
  const authority = `127.0.0.1:${destination.port}`
  const cases: ReadonlyArray<readonly [string, Array<readonly [string, string]>, Buffer?]> = [
    [':scheme and :path without :protocol', [[':method', 'CONNECT'], [':scheme', 'https'], [':path', '/'], [':authority', authority]]],
    ['no :authority', [[':method', 'CONNECT']]],
    ['connection header', [[':method', 'CONNECT'], [':authority', authority], ['connection', 'keep-alive']]],
    ['transfer-encoding header', [[':method', 'CONNECT'], [':authority', authority], ['transfer-encoding', 'chunked']]],
    ['upper-case header name', [[':method', 'CONNECT'], [':authority', authority], ['X-Upper', '1']]],
    ['content-length 3 with 10 bytes of DATA', [[':method', 'CONNECT'], [':authority', authority], ['content-length', '3']], Buffer.alloc(10, 0x61)]
  ]
  let streamId = 1
  for (const [name, fields, data] of cases) {
    const frames = [frame(FRAME.HEADERS, FLAG.END_HEADERS, streamId, headerBlock(fields))]
    if (data !== undefined) frames.push(frame(FRAME.DATA, 0, streamId, data))
    connection.socket.write(Buffer.concat(frames))
    const outcome = await verdict(connection, streamId)
    t.ok('reset' in outcome ? outcome.reset === PROTOCOL_ERROR : outcome.status400, `${name}: ${JSON.stringify(outcome)}`)
    streamId += 2
  }
  t.equal(connection.goawayCode(), undefined, 'the connection was not torn down')

  // A valid CONNECT on the same connection is the probe: the first connection the destination got must be its.
  await expectNothingDialedBefore(t, destination.accepts, 'no malformed CONNECT was dialed', {
    send: async (marker) => {
      connection.socket.write(frame(FRAME.HEADERS, FLAG.END_HEADERS, streamId, headerBlock([[':method', 'CONNECT'], [':authority', authority]])))
      t.same(await verdict(connection, streamId), { status200: true, status400: false }, 'a valid CONNECT on the same connection gets 200')
      connection.socket.write(frame(FRAME.DATA, 0, streamId, Buffer.from(marker)))
    }
  })
  t.equal(destination.accepted, 1)
  connection.socket.destroy()
})

test('CR, LF or NUL in an HTTP/2 header value never reaches the application or the proxy: the field is dropped before the request is seen', async (t) => {
  const destination = await startCountingDestination(t)
  const seen: string[][] = []
  const proxy = await startHttp2Proxy(t, {}, (app) => {
    app.addHook('onRequest', async (request) => { seen.push(request.raw.rawHeaders) })
  })
  const connection = await connectRawHttp2(proxy.port, proxy.tls.cert)
  const authority = `127.0.0.1:${destination.port}`
  const hostile = [['x-injected', 'a\r\nx-evil: 1'], ['x-lf', 'a\nb'], ['x-nul', 'a\u0000b']] as const
  hostile.forEach(([name, value], index) => {
    connection.socket.write(frame(FRAME.HEADERS, FLAG.END_HEADERS, 1 + 2 * index, headerBlock([[':method', 'CONNECT'], [':authority', authority], [name, value]])))
  })
  for (const [index] of hostile.entries()) await verdict(connection, 1 + 2 * index)
  t.equal(seen.length, hostile.length, 'every stream reached the hooks')
  for (const rawHeaders of seen) {
    t.notOk(rawHeaders.some((text) => /[\r\n\0]/.test(text)), `no CR, LF or NUL in ${JSON.stringify(rawHeaders)}`)
    t.notOk(rawHeaders.some((text) => text.startsWith('x-')), 'the invalid field itself is gone')
  }
  connection.socket.destroy()
})

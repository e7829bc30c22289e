import { test, type Test } from 'tap'
import { constants, type ClientHttp2Session } from 'node:http2'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { connectHttp2, startHttp2Proxy } from './helpers/http2-proxy'
import { makeInterceptionPki } from './helpers/interception-pki'
import { interceptAll, startInterceptingProxy, startTlsOrigin } from './helpers/intercepting-proxy'
import { http2OverTls, openInterceptedTls } from './helpers/intercepted-client'
import { capturedLog } from './helpers/captured-log'
import { eventually } from './helpers/eventually'

/** A destination that writes `response` to every request, then closes its connection when `thenClose`. */
async function startRawDestination (t: Test, response: string, thenClose: boolean): Promise<number> {
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
    socket.once('close', () => sockets.delete(socket))
    socket.once('data', () => {
      if (thenClose) socket.end(response, () => socket.destroy())
      else socket.write(response)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { for (const socket of sockets) socket.destroy(); server.close(() => resolve()) }))
  return (server.address() as AddressInfo).port
}

interface StreamOutcome {
  status: number
  headers: Record<string, unknown>
  bytes: number
  ended: boolean
  rstCode: number | undefined
}

/** One `:scheme http` request through the proxy's HTTP/2 listener, followed to the stream's close. */
function requestOverHttp2 (session: ClientHttp2Session, port: number): Promise<StreamOutcome> {
  const stream = session.request({ ':method': 'GET', ':scheme': 'http', ':authority': `127.0.0.1:${port}`, ':path': '/' })
  const outcome: StreamOutcome = { status: 0, headers: {}, bytes: 0, ended: false, rstCode: undefined }
  stream.on('error', () => {})
  stream.on('response', (headers) => { outcome.status = Number(headers[':status']); outcome.headers = headers })
  stream.on('data', (chunk: Buffer) => { outcome.bytes += chunk.length })
  stream.on('end', () => { outcome.ended = true })
  return new Promise((resolve) => stream.once('close', () => resolve({ ...outcome, rstCode: stream.rstCode })))
}

for (const [framing, head] of [
  ['Content-Length', 'HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 20000\r\n\r\n'],
  ['chunked', 'HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n2710\r\n']
] as const) {
  test(`a body the destination cuts short (${framing}) reaches an HTTP/2 client as a stream reset with INTERNAL_ERROR, never as a complete body; its access line blames the destination, not the client`, async (t) => {
    const port = await startRawDestination(t, head + 'x'.repeat(10000), true)
    const log = capturedLog()
    const proxy = await startHttp2Proxy(t, undefined, undefined, {}, log.logger)
    const session = await connectHttp2(t, proxy)
    const outcome = await requestOverHttp2(session, port)
    t.equal(outcome.status, 200, 'the head was passed on')
    t.ok(outcome.bytes <= 10000, 'no more than the destination sent')
    t.equal(outcome.rstCode, constants.NGHTTP2_INTERNAL_ERROR, 'the stream is reset with an error code')
    t.notOk(outcome.ended, 'the client never sees the body end')
    await eventually(() => log.access().length === 1)
    t.match(log.access()[0], { kind: 'forward', status: 200, errorType: 'connection_terminated' })
    t.notOk('closeReason' in (log.access()[0] ?? {}), 'not logged as a client that left')
  })
}

test('a destination 204 with a Content-Length reaches an HTTP/2 client as a valid 204, not a protocol error', async (t) => {
  const port = await startRawDestination(t, 'HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n', false)
  const proxy = await startHttp2Proxy(t)
  const session = await connectHttp2(t, proxy)
  const outcome = await requestOverHttp2(session, port)
  t.equal(outcome.status, 204)
  t.equal(outcome.headers['content-length'], undefined)
  t.equal(outcome.rstCode, constants.NGHTTP2_NO_ERROR)
  t.ok(outcome.ended)
})

test('inside an intercepted tunnel, a body the destination cuts short reaches an HTTP/2 client as a stream reset with INTERNAL_ERROR', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': '20000' })
    res.write('x'.repeat(10000), () => res.socket?.destroy())
  })
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  const authority = `127.0.0.1:${origin.port}`
  const socket = await openInterceptedTls(t, proxy.port, authority, { ca: pki.operatorCa.cert, alpn: ['h2'] })
  const session = await http2OverTls(t, socket, authority)
  const stream = session.request({ ':path': '/download' })
  const outcome = { status: 0, bytes: 0, ended: false }
  stream.on('error', () => {})
  stream.on('response', (headers) => { outcome.status = Number(headers[':status']) })
  stream.on('data', (chunk: Buffer) => { outcome.bytes += chunk.length })
  stream.on('end', () => { outcome.ended = true })
  await new Promise<void>((resolve) => stream.once('close', () => resolve()))
  t.equal(outcome.status, 200)
  t.ok(outcome.bytes <= 10000)
  t.equal(stream.rstCode, constants.NGHTTP2_INTERNAL_ERROR)
  t.notOk(outcome.ended)
})

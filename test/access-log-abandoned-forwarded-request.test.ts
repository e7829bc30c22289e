import { test } from 'tap'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { connect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net'
import { startProxy } from './helpers/servers'
import { capturedLog } from './helpers/captured-log'
import { eventually } from './helpers/eventually'
import { startHttp2Proxy, connectHttp2, openHttp2Tunnel } from './helpers/http2-proxy'
import { startTcpDestination } from './helpers/tcp-destination'
import { constants } from 'node:http2'

/** An origin that holds every request open: `/partial` gets its head and 10 bytes of 1,000, the others nothing. */
async function startHoldingOrigin (t: Parameters<typeof startProxy>[0]): Promise<{ port: number, nextRequest: () => Promise<IncomingMessage> }> {
  const waiting: Array<(request: IncomingMessage) => void> = []
  const held: ServerResponse[] = []
  const server = createServer((request, response) => {
    held.push(response)
    if (request.url === '/partial') {
      response.writeHead(200, { 'content-type': 'text/plain', 'content-length': '1000' })
      response.write('0123456789')
    }
    waiting.shift()?.(request)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return {
    port: (server.address() as AddressInfo).port,
    nextRequest: () => new Promise((resolve) => waiting.push(resolve))
  }
}

/** Sends `head` (and `body`) to the proxy, and resolves with the socket once `ready` resolves. */
async function sendThen (proxyPort: number, head: string, ready: Promise<unknown>): Promise<Socket> {
  const socket = connect(proxyPort, '127.0.0.1')
  socket.on('error', () => {})
  socket.write(head)
  await ready
  return socket
}

test('a forwarded request whose client leaves before the answer is complete gets one access line: client-gone, 499 before any head, the head\'s status after it', async (t) => {
  const origin = await startHoldingOrigin(t)
  const log = capturedLog()
  const proxy = await startProxy(t, {}, undefined, { logger: log.logger })
  const target = `http://127.0.0.1:${origin.port}`

  // Before the destination answered.
  const before = await sendThen(proxy.port, `GET ${target}/hold HTTP/1.1\r\nHost: x\r\n\r\n`, origin.nextRequest())
  before.destroy()
  await eventually(() => log.access().length === 1)

  // After the head and part of the body.
  const partial = connect(proxy.port, '127.0.0.1')
  partial.on('error', () => {})
  const headSeen = new Promise<void>((resolve) => {
    let text = ''
    partial.on('data', (chunk: Buffer) => { text += chunk.toString(); if (text.includes('0123456789')) resolve() })
  })
  partial.write(`GET ${target}/partial HTTP/1.1\r\nHost: x\r\n\r\n`)
  await headSeen
  partial.destroy()
  await eventually(() => log.access().length === 2)

  // While its body was being uploaded.
  const upload = await sendThen(proxy.port, `POST ${target}/upload HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n${'a'.repeat(1000)}`, origin.nextRequest())
  upload.destroy()
  await eventually(() => log.access().length === 3)

  const [left, cut, uploading] = log.access()
  t.match(left, { kind: 'forward', method: 'GET', destination: `127.0.0.1:${origin.port}`, address: `127.0.0.1:${origin.port}`, status: 499, closeReason: 'client-gone' })
  t.match(cut, { kind: 'forward', status: 200, closeReason: 'client-gone' })
  t.ok(Number(cut?.bytesOut) >= 10, 'the bytes sent before the client left are counted')
  t.match(uploading, { kind: 'forward', method: 'POST', status: 499, closeReason: 'client-gone' })

  // A request answered after them: its line comes, and no second line for the three.
  const answered = origin.nextRequest().then(() => {})
  const last = await sendThen(proxy.port, `GET ${target}/hold HTTP/1.1\r\nHost: x\r\n\r\n`, answered)
  last.destroy()
  await eventually(() => log.access().length === 4)
  t.equal(log.access().length, 4, 'one line per request')
  t.notOk(log.lines().some((line) => line.includes('The connection to the destination failed')), 'a client that left is not logged as a destination failure')
})

test('an HTTP/2 CONNECT that became a tunnel gets the tunnel\'s access line only, not a second line as an answered CONNECT', async (t) => {
  const destination = await startTcpDestination(t)
  const log = capturedLog()
  const proxy = await startHttp2Proxy(t, { destinations: { allowPrivateNetworks: true, allowedPorts: [destination.port] } }, undefined, {}, log.logger)
  const session = await connectHttp2(t, proxy)
  const tunnel = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`)
  t.equal(tunnel.status, 200)
  const upstream = await destination.nextConnection()
  tunnel.stream.close()
  upstream.destroy()
  await eventually(() => log.access().some((entry) => entry.kind === 'tunnel'))

  // A refused CONNECT afterwards: once its line is in, any line the tunnel's stream made is too.
  const refused = await openHttp2Tunnel(session, '127.0.0.1:1')
  t.equal(refused.status, 403)
  await eventually(() => log.access().some((entry) => entry.status === 403))
  const kinds = log.access().map((entry) => `${String(entry.kind)} ${String(entry.status)}`)
  t.same(kinds, ['tunnel 200', 'connect 403'])
})

test('an HTTP/2 request whose client resets its stream mid-body gets one client-gone line with the bytes sent, not an answered one (Node reports the reset stream as finished), and one before the head gets 499', async (t) => {
  const origin = await startHoldingOrigin(t)
  const log = capturedLog()
  const proxy = await startHttp2Proxy(t, { destinations: { allowPrivateNetworks: true, allowedPorts: '*' } }, undefined, {}, log.logger)
  const session = await connectHttp2(t, proxy)
  const authority = `127.0.0.1:${origin.port}`

  const partial = session.request({ ':scheme': 'http', ':authority': authority, ':path': '/partial' })
  partial.on('error', () => {})
  await new Promise<void>((resolve) => partial.once('data', () => resolve()))
  partial.close(constants.NGHTTP2_CANCEL)
  await eventually(() => log.access().length === 1)

  const arrived = origin.nextRequest()
  const early = session.request({ ':scheme': 'http', ':authority': authority, ':path': '/hold' })
  early.on('error', () => {})
  await arrived
  early.close(constants.NGHTTP2_CANCEL)
  await eventually(() => log.access().length === 2)

  const [cut, left] = log.access()
  t.match(cut, { kind: 'forward', status: 200, closeReason: 'client-gone', bytesOut: 10 })
  t.match(left, { kind: 'forward', status: 499, closeReason: 'client-gone' })
})

test('a body its destination cuts short is logged as the destination\'s failure (errorType, no closeReason), not as a client that left', async (t) => {
  const destination = createNetServer((socket) => {
    socket.on('error', () => {})
    socket.once('data', () => socket.end(`HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 20000\r\n\r\n${'x'.repeat(10000)}`, () => socket.destroy()))
  })
  await new Promise<void>((resolve) => destination.listen(0, '127.0.0.1', resolve))
  t.teardown(() => destination.close())
  const log = capturedLog()
  const proxy = await startProxy(t, {}, undefined, { logger: log.logger })
  const port = (destination.address() as AddressInfo).port
  const cut = await sendThen(proxy.port, `GET http://127.0.0.1:${port}/ HTTP/1.1\r\nHost: x\r\n\r\n`, Promise.resolve())
  cut.resume()
  await new Promise((resolve) => cut.once('close', resolve))
  await eventually(() => log.access().length === 1)
  t.match(log.access()[0], { kind: 'forward', status: 200, errorType: 'connection_terminated', bytesOut: 10000 })
  t.notOk('closeReason' in (log.access()[0] ?? {}))
})

import { test } from 'tap'
import { createServer, type IncomingMessage } from 'node:http'
import { connect, type AddressInfo, type Socket } from 'node:net'
import type { ForwardProxyCaptureEntry, ForwardProxyCaptureStream } from '../lib/index'
import { startProxy } from './helpers/servers'

/** The next entry of `feed`. */
async function nextEntry (feed: ForwardProxyCaptureStream): Promise<ForwardProxyCaptureEntry> {
  const { value, done } = await feed.next()
  if (done === true) throw new Error('the capture iterator ended')
  return value
}

/** An origin that holds `/hold` without an answer and sends `/partial` its head and 10 of 1,000 bytes; `/whole` is answered. */
async function startHoldingOrigin (t: Parameters<typeof startProxy>[0]): Promise<{ port: number, nextRequest: () => Promise<IncomingMessage> }> {
  const waiting: Array<(request: IncomingMessage) => void> = []
  const server = createServer((request, response) => {
    if (request.url === '/partial') {
      response.writeHead(200, { 'content-type': 'text/plain', 'content-length': '1000' })
      response.write('0123456789')
    } else if (request.url === '/whole') {
      response.end('done')
    }
    waiting.shift()?.(request)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return { port: (server.address() as AddressInfo).port, nextRequest: () => new Promise((resolve) => waiting.push(resolve)) }
}

/** A raw client connection to the proxy that has sent `head`. */
function send (port: number, head: string): Socket {
  const socket = connect(port, '127.0.0.1')
  socket.on('error', () => {})
  socket.write(head)
  return socket
}

test('a recorded request whose client leaves before its response is complete gets a capture entry: 499 without a head, the head and the bytes that passed after it, _closeReason client-gone', async (t) => {
  const origin = await startHoldingOrigin(t)
  const proxy = await startProxy(t, { capture: {} })
  const feed = proxy.app.forwardProxy.captures()
  const target = `http://127.0.0.1:${origin.port}`

  const arrived = origin.nextRequest()
  const before = send(proxy.port, `GET ${target}/hold?q=1 HTTP/1.1\r\nHost: x\r\nX-Trace: before\r\n\r\n`)
  await arrived
  before.destroy()
  const left = await nextEntry(feed)
  t.equal(left.request.url, `${target}/hold?q=1`)
  t.equal(left.response.status, 499, 'no head reached the client')
  t.same(left.response.headers, [], 'no response headers are recorded that the client never got')
  t.equal(left.response.bodySize, 0)
  t.equal(left._closeReason, 'client-gone')
  t.equal(left._decision, 'allow')
  t.equal(left.serverIPAddress, '127.0.0.1', 'the destination was dialed')

  const partial = send(proxy.port, `GET ${target}/partial HTTP/1.1\r\nHost: x\r\n\r\n`)
  await new Promise<void>((resolve) => {
    let text = ''
    partial.on('data', (chunk: Buffer) => { text += chunk.toString(); if (text.includes('0123456789')) resolve() })
  })
  partial.destroy()
  const cut = await nextEntry(feed)
  t.equal(cut.request.url, `${target}/partial`)
  t.equal(cut.response.status, 200, 'the head the client got')
  t.ok(cut.response.headers.some((pair) => pair.name.toLowerCase() === 'content-length' && pair.value === '1000'))
  t.equal(cut.response.bodySize, 10)
  t.same(cut.response.content, { size: 10, mimeType: 'text/plain', text: '0123456789', comment: 'cut short: the body stopped after 10 bytes' })
  t.equal(cut._closeReason, 'client-gone')

  // A request that completes has no _closeReason, and nothing more came for the two above.
  const whole = send(proxy.port, `GET ${target}/whole HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  const done = await nextEntry(feed)
  whole.destroy()
  t.equal(done.request.url, `${target}/whole`)
  t.equal(done.response.status, 200)
  t.equal(done._closeReason, undefined)
  t.equal(done.response.content.comment, undefined)
})

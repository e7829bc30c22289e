import { test } from 'tap'
import { once } from 'node:events'
import { startOrigin, startProxy } from './helpers/servers'
import { connectClient } from './helpers/raw-client'

test('bodies: a chunked request body is streamed to the destination intact', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  const socket = await connectClient(t, proxy.port)
  socket.write(`POST http://127.0.0.1:${origin.port}/upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n`)
  const pieces = ['first piece|', 'x'.repeat(70_000), '|ünïcödé|', '\r\n0\r\n\r\n-not-a-terminator|']
  for (const piece of pieces) {
    const bytes = Buffer.from(piece)
    socket.write(`${bytes.length.toString(16)};ext=1\r\n`)
    socket.write(bytes)
    socket.write('\r\n')
  }
  socket.write('0\r\n\r\n')
  const chunks: Buffer[] = []
  socket.on('data', (chunk: Buffer) => chunks.push(chunk))
  await once(socket, 'close')
  t.match(Buffer.concat(chunks).toString(), /^HTTP\/1\.1 200 /)
  t.equal(origin.requests.length, 1)
  t.equal(origin.requests[0]?.body, pieces.join(''), 'body arrives byte for byte')
  t.equal(origin.requests[0]?.headers['transfer-encoding'], 'chunked')
  t.equal(origin.requests[0]?.headers['content-type'], 'text/plain')
})

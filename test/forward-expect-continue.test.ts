import { test } from 'tap'
import { once } from 'node:events'
import { startOrigin, startProxy } from './helpers/servers'
import { connectClient } from './helpers/raw-client'

test('bodies: Expect: 100-continue gets 100 Continue and the body is then forwarded', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  const socket = await connectClient(t, proxy.port)
  let received = ''
  const interim = new Promise<void>((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1')
      if (received.includes('\r\n\r\n')) resolve()
    })
  })
  socket.write(`PUT http://127.0.0.1:${origin.port}/put HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`)
  await interim
  t.match(received, /^HTTP\/1\.1 100 Continue\r\n\r\n$/, 'interim response before any body byte is sent')
  t.equal(origin.requests.length, 0)
  socket.write('hello')
  await once(socket, 'close')
  t.match(received, /\r\n\r\nHTTP\/1\.1 200 /)
  t.equal(origin.requests[0]?.body, 'hello')
  t.equal(origin.requests[0]?.headers.expect, undefined, 'the proxy handled the expectation itself')
})

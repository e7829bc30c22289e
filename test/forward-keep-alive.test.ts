import { test } from 'tap'
import { once } from 'node:events'
import { startOrigin, startProxy } from './helpers/servers'
import { connectClient } from './helpers/raw-client'

test('one client connection carries pipelined requests to different destinations, answered in order', async (t) => {
  const first = await startOrigin(t, (_req, res) => { res.end('from-first') })
  const second = await startOrigin(t, (_req, res) => { res.end('from-second') })
  const proxy = await startProxy(t)
  const socket = await connectClient(t, proxy.port)
  socket.write(
    `GET http://127.0.0.1:${first.port}/1 HTTP/1.1\r\nHost: x\r\n\r\n` +
    `POST http://127.0.0.1:${second.port}/2 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc` +
    `GET http://127.0.0.1:${first.port}/3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`
  )
  let text = ''
  socket.on('data', (chunk: Buffer) => { text += chunk.toString() })
  await once(socket, 'close')
  const bodies = [...text.matchAll(/from-(first|second)/g)].map((m) => m[0])
  t.same(bodies, ['from-first', 'from-second', 'from-first'])
  t.equal(text.match(/HTTP\/1\.1 200 /g)?.length, 3)
  t.same(first.requests.map((r) => r.url), ['/1', '/3'])
  t.same(second.requests.map((r) => [r.url, r.body]), [['/2', 'abc']])
})

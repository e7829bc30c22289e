import { test } from 'tap'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import type { Test } from 'tap'
import { startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'

// Node's own HTTP parser (llhttp, strict mode) rejects every shape below before Fastify or the
// proxy sees a request; Fastify's client-error handler answers 400 and closes the connection.
// What matters is the outcome: one 400, the connection closed, no second request at the origin.
// (For a valid head followed by a bad body, the first request may already be on its way and is
// then aborted; the origin records raw bytes, so even a partial smuggled head would show.)

/** A raw TCP origin that records every byte it receives and never answers. */
async function startByteOrigin (t: Test): Promise<{ port: number, received: () => string }> {
  const chunks: Buffer[] = []
  const sockets: Socket[] = []
  const server = createServer((socket) => {
    sockets.push(socket)
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { for (const socket of sockets) socket.destroy(); server.close(() => resolve()) }))
  return { port: (server.address() as AddressInfo).port, received: () => Buffer.concat(chunks).toString('latin1') }
}

type Shape = (origin: number) => string

const smuggled = (origin: number): string => `GET http://127.0.0.1:${origin}/smuggled HTTP/1.1\r\nHost: x\r\n\r\n`
const post = (origin: number, headers: string, body: string): string =>
  `POST http://127.0.0.1:${origin}/first HTTP/1.1\r\nHost: x\r\n${headers}\r\n${body}${smuggled(origin)}`

const SHAPES: Record<string, Record<string, Shape>> = {
  'Content-Length with Transfer-Encoding: chunked': {
    'CL then TE': (o) => post(o, 'Content-Length: 5\r\nTransfer-Encoding: chunked\r\n', '0\r\n\r\n'),
    'TE then CL': (o) => post(o, 'Transfer-Encoding: chunked\r\nContent-Length: 40\r\n', '0\r\n\r\n')
  },
  'Transfer-Encoding other than a final chunked': {
    'chunked, identity': (o) => post(o, 'Transfer-Encoding: chunked, identity\r\n', '5\r\nhello\r\n0\r\n\r\n'),
    xchunked: (o) => post(o, 'Transfer-Encoding: xchunked\r\n', '5\r\nhello\r\n0\r\n\r\n'),
    'space before colon': (o) => post(o, 'Transfer-Encoding :chunked\r\n', '5\r\nhello\r\n0\r\n\r\n')
  },
  'bare LF in a chunk-size line or chunk extension': {
    'size line': (o) => post(o, 'Transfer-Encoding: chunked\r\n', '5\nhello\r\n0\r\n\r\n'),
    extension: (o) => post(o, 'Transfer-Encoding: chunked\r\n', '5;a=b\nhello\r\n0\r\n\r\n')
  },
  'duplicate differing or malformed Content-Length': {
    'duplicate differing': (o) => post(o, 'Content-Length: 5\r\nContent-Length: 6\r\n', 'hello'),
    '+5': (o) => post(o, 'Content-Length: +5\r\n', 'hello'),
    '0x5': (o) => post(o, 'Content-Length: 0x5\r\n', 'hello'),
    '-1': (o) => post(o, 'Content-Length: -1\r\n', 'hello'),
    '21 digits': (o) => post(o, 'Content-Length: 100000000000000000000\r\n', 'hello')
  },
  'obs-fold, bare CR, NUL or 0x80 in a header name': {
    'obs-fold': (o) => `GET http://127.0.0.1:${o}/first HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\n\r\n${smuggled(o)}`,
    'obs-fold into Transfer-Encoding': (o) => post(o, 'Transfer-Encoding: identity\r\n chunked\r\nContent-Length: 5\r\n', 'hello'),
    'bare CR in a value': (o) => `GET http://127.0.0.1:${o}/first HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n${smuggled(o)}`,
    'NUL in a name': (o) => `GET http://127.0.0.1:${o}/first HTTP/1.1\r\nHost: x\r\nX-Bad\0Name: 1\r\n\r\n${smuggled(o)}`,
    '0x80 in a name': (o) => `GET http://127.0.0.1:${o}/first HTTP/1.1\r\nHost: x\r\nX-Bad\x80Name: 1\r\n\r\n${smuggled(o)}`
  }
}

for (const [rule, shapes] of Object.entries(SHAPES)) {
  test(`${rule} -> 400, connection closed, no second request reaches the origin`, async (t) => {
    const origin = await startByteOrigin(t)
    const proxy = await startProxy(t)
    for (const [name, shape] of Object.entries(shapes)) {
      const res = await rawExchange(proxy.port, Buffer.from(shape(origin.port), 'latin1'))
      t.equal(res.status, 400, `${name}: 400`)
      t.equal(res.text.match(/HTTP\/1\.1 \d{3}/g)?.length, 1, `${name}: exactly one response, then close`)
    }
    t.notMatch(origin.received(), /smuggled/, 'no smuggled request reached the origin')
  })
}

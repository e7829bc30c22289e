import { test, type Test } from 'tap'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'

/** A raw TCP origin that answers the first bytes of each connection with `response`. */
async function startRawOrigin (t: Test, response: string): Promise<number> {
  const sockets: Socket[] = []
  const server = createServer((socket) => {
    sockets.push(socket)
    socket.on('error', () => {})
    socket.once('data', () => socket.write(response))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { for (const socket of sockets) socket.destroy(); server.close(() => resolve()) }))
  return (server.address() as AddressInfo).port
}

const MALFORMED: Record<string, string> = {
  'not HTTP at all': 'garbage\r\n\r\n',
  'Content-Length with Transfer-Encoding': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n',
  'duplicate differing Content-Length': 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello',
  'NUL in a header name': 'HTTP/1.1 200 OK\r\nX-A\0: 1\r\nContent-Length: 0\r\n\r\n'
}

test('a malformed response head gets 502 with Proxy-Status error=http_protocol_error', async (t) => {
  const proxy = await startProxy(t)
  for (const [name, response] of Object.entries(MALFORMED)) {
    const port = await startRawOrigin(t, response)
    const res = await rawExchange(proxy.port, `GET http://127.0.0.1:${port}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
    t.equal(res.status, 502, name)
    t.match(res.text, /\r\nproxy-status: fastify-forward-proxy; error=http_protocol_error\r\n/i, name)
    t.notMatch(res.text, /HPE_|llhttp|\bat .+:\d+:\d+|Error:/, `${name}: no internals in the body`)
  }
})

test('a response head over the size limit gets 502 http_response_header_section_size', async (t) => {
  const port = await startRawOrigin(t, `HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(100_000)}\r\nContent-Length: 0\r\n\r\n`)
  const proxy = await startProxy(t)
  const res = await rawExchange(proxy.port, `GET http://127.0.0.1:${port}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  t.equal(res.status, 502)
  t.match(res.text, /\r\nproxy-status: fastify-forward-proxy; error=http_response_header_section_size\r\n/i)
})

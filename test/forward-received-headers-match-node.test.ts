import { test } from 'tap'
import { createServer, type IncomingMessage } from 'node:http'
import { connect as http2Connect, constants, createServer as createHttp2Server, type Http2ServerRequest } from 'node:http2'
import { connect, type AddressInfo } from 'node:net'
import { receivedHeaderObject } from './helpers/internals'

// Every field Node's parsers treat specially, plus ordinary ones, each sent twice.
const NAMES = [
  'age', 'authorization', 'content-type', 'etag', 'expires', 'from', 'if-modified-since', 'if-unmodified-since',
  'last-modified', 'location', 'max-forwards', 'proxy-authorization', 'referer', 'retry-after', 'server', 'user-agent',
  'cookie', 'set-cookie', 'date', 'vary', 'origin', 'accept', 'if-match', 'cache-control', 'if-none-match',
  'accept-encoding', 'accept-language', 'x-forwarded-for', 'content-encoding', 'x-forwarded-host', 'x-forwarded-proto',
  'range', 'if-range', 'dnt', 'tk', 'content-language', 'via', 'x-other'
]

function plain (headers: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(headers))
}

test('receivedHeaderObject rebuilds what Node 20\'s HTTP/1.1 parser made of repeated fields (first wins, cookie and others joined, set-cookie listed)', async (t) => {
  const seen = await new Promise<IncomingMessage>((resolve) => {
    const server = createServer((req, res) => { res.end(); server.closeAllConnections(); server.close(); resolve(req) })
    server.listen(0, '127.0.0.1', () => {
      const socket = connect((server.address() as AddressInfo).port, '127.0.0.1')
      const lines = NAMES.flatMap((name, i) => [`${i % 2 === 0 ? name.toUpperCase() : name}: a`, `${name}: b`])
      socket.end(`GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n${lines.join('\r\n')}\r\n\r\n`)
      socket.on('error', () => {})
    })
  })
  t.same(plain(receivedHeaderObject(seen.rawHeaders, 1)), plain(seen.headers))
})

test('receivedHeaderObject rebuilds what Node 20\'s HTTP/2 server made of repeated fields (single-value fields as Node\'s client refuses them)', async (t) => {
  const server = createHttp2Server()
  const seen = new Promise<Http2ServerRequest>((resolve) => server.once('request', (req, res) => { res.end(); resolve(req) }))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const session = http2Connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
  session.on('error', () => {})
  t.teardown(() => session.destroy())
  const headers: Record<string, string | string[]> = {}
  for (const name of NAMES) {
    // Node's client refuses repeats of the fields its server keeps only once: probe, then send one.
    try {
      session.request({ [name]: ['a', 'b'] }).close()
      headers[name] = ['a', 'b']
    } catch (error) {
      t.equal((error as { code?: string }).code, 'ERR_HTTP2_HEADER_SINGLE_VALUE', name)
      headers[name] = 'a'
    }
  }
  session.request({ ...headers, [constants.HTTP2_HEADER_PATH]: '/' }).resume()
  const req = await seen
  t.same(plain(receivedHeaderObject(req.rawHeaders, 2)), plain(req.headers))
})

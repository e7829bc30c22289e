import { test } from 'tap'
import { startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

/** The destination's header lines, without the `connection: keep-alive` undici adds itself. */
function pairs (rawHeaders: string[]): string[] {
  const lines: string[] = []
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) lines.push(`${rawHeaders[i] as string}: ${rawHeaders[i + 1] as string}`)
  return lines.filter((line) => line !== 'connection: keep-alive')
}

test('http:// forwarding: a root hook adds, replaces and removes request headers and the destination sees exactly that, names and order as received otherwise', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, {}, (app) => {
    app.addHook('onRequest', async (request) => {
      request.headers['x-tenant'] = 'blue'
      request.headers['x-replace'] = 'new'
      delete request.headers.cookie
    })
    app.addHook('preHandler', async (request) => {
      request.headers['x-late'] = ['one', 'two']
    })
  })
  const head = [
    `GET http://127.0.0.1:${origin.port}/x HTTP/1.1`,
    'Host: ignored.example',
    'X-First: 1',
    'Cookie: a=1',
    'X-Replace: old',
    'X-Dup: a',
    'X-Replace: older',
    'X-Dup: b',
    'Connection: close'
  ]
  const res = await rawExchange(proxy.port, `${head.join('\r\n')}\r\n\r\n`)
  t.equal(res.status, 200)
  t.same(pairs(origin.requests[0]?.rawHeaders ?? []), [
    `host: 127.0.0.1:${origin.port}`,
    'X-First: 1',
    'X-Replace: new',
    'X-Dup: a',
    'X-Dup: b',
    'x-tenant: blue',
    'x-late: one',
    'x-late: two',
    'via: 1.1 fastify-forward-proxy'
  ], 'the replaced header keeps its place and case, repeats of it are gone, added ones follow the received ones')
})

test('http:// forwarding: a hook that only reads the headers changes nothing: case, order, repeats and the joined cookie stay as received', async (t) => {
  const origin = await startOrigin(t)
  const seen: unknown[] = []
  const proxy = await startProxy(t, {}, (app) => {
    app.addHook('onRequest', async (request) => { seen.push(request.headers['x-dup'], request.headers.cookie, request.headers.accept) })
  })
  const head = [
    `GET http://127.0.0.1:${origin.port}/x HTTP/1.1`,
    'Host: ignored.example',
    'ACCEPT: text/plain',
    'X-Dup: a',
    'Cookie: a=1',
    'x-DUP: b',
    'Accept: text/html',
    'User-Agent: first',
    'User-Agent: second',
    'Connection: close'
  ]
  const res = await rawExchange(proxy.port, `${head.join('\r\n')}\r\n\r\n`)
  t.equal(res.status, 200)
  t.same(seen, ['a, b', 'a=1', 'text/plain, text/html'])
  t.same(pairs(origin.requests[0]?.rawHeaders ?? []), [
    `host: 127.0.0.1:${origin.port}`,
    'ACCEPT: text/plain',
    'X-Dup: a',
    'Cookie: a=1',
    'x-DUP: b',
    'Accept: text/html',
    'User-Agent: first',
    'User-Agent: second',
    'via: 1.1 fastify-forward-proxy'
  ], 'a repeated first-wins header (User-Agent) is not mistaken for a change')
})

test('http:// forwarding: a hook cannot add hop-by-hop or Connection-listed headers, and Host and Content-Length stay the proxy\'s', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, {}, (app) => {
    app.addHook('onRequest', async (request) => {
      request.headers.te = 'trailers'
      request.headers['transfer-encoding'] = 'chunked'
      request.headers.upgrade = 'websocket'
      request.headers['x-listed'] = 'set by the hook'
      request.headers['proxy-authorization'] = 'Basic eDp5'
      delete request.headers['content-length']
      request.headers.host = `127.0.0.1:${origin.port}`
    })
  })
  const head = [
    `POST http://127.0.0.1:${origin.port}/x HTTP/1.1`,
    'Host: ignored.example',
    'Connection: close, X-Listed',
    'Content-Length: 5'
  ]
  const res = await rawExchange(proxy.port, `${head.join('\r\n')}\r\n\r\nhello`)
  t.equal(res.status, 200)
  const seen = origin.requests[0]
  t.equal(seen?.body, 'hello', 'the body still goes out, framed as received')
  t.same(pairs(seen?.rawHeaders ?? []), [
    `host: 127.0.0.1:${origin.port}`,
    'via: 1.1 fastify-forward-proxy',
    'content-length: 5'
  ], 'undici writes Content-Length itself, from the received value')
})

test('http:// forwarding: a hook setting a Host for another authority, another Content-Length, or a value Node cannot send (CR LF, another control character, a character past U+00FF) gets 500 proxy_internal_error and nothing is sent', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, {}, (app) => {
    app.addHook('preHandler', async (request) => {
      if (request.url.endsWith('/host')) request.headers.host = 'other.example'
      if (request.url.endsWith('/length')) request.headers['content-length'] = '1'
      if (request.url.endsWith('/crlf')) request.headers['x-bad'] = 'a\r\nx-injected: 1'
      if (request.url.endsWith('/control')) request.headers['x-bad'] = 'a\x01b'
      if (request.url.endsWith('/wide')) request.headers['x-bad'] = 'price in \u20ac'
    })
  })
  const cases: Array<[string, string]> = [['/host', 'a hook set a Host for another authority'], ['/length', 'a hook changed content-length'], ['/crlf', 'a hook set an invalid header value'], ['/control', 'a hook set an invalid header value'], ['/wide', 'a hook set an invalid header value']]
  for (const [path, details] of cases) {
    const res = await rawExchange(proxy.port, `POST http://127.0.0.1:${origin.port}${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello`)
    t.equal(res.status, 500, path)
    t.match(res.text, new RegExp(`proxy-status: fastify-forward-proxy; error=proxy_internal_error; details="${details}"`, 'i'))
    t.notMatch(res.text, /at .*\.ts:\d+/, 'no stack trace')
  }
  await expectNothingDialedBefore(t, origin.accepts, 'nothing was sent')
})

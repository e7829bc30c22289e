import { test } from 'tap'
import type { FastifyRequest } from 'fastify'
import { startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'

// Fastify itself answers 415 to a Content-Type it cannot parse and 400 to a QUERY without one;
// the proxy forwards both as received and lets the destination decide.

for (const contentType of ['bogus', 'text/', 'a/b c']) {
  test(`a POST with the malformed Content-Type ${JSON.stringify(contentType)} is forwarded as received`, async (t) => {
    const origin = await startOrigin(t)
    const proxy = await startProxy(t)
    const res = await rawExchange(proxy.port, `POST http://127.0.0.1:${origin.port}/upload HTTP/1.1\r\nHost: x\r\nContent-Type: ${contentType}\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello`)
    t.equal(res.status, 200, 'not 415 from the framework')
    t.equal(origin.requests.length, 1)
    t.equal(origin.requests[0]?.headers['content-type'], contentType)
    t.equal(origin.requests[0]?.body, 'hello')
  })
}

test('a QUERY without Content-Type is forwarded without one', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  const res = await rawExchange(proxy.port, `QUERY http://127.0.0.1:${origin.port}/q HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc`)
  t.equal(res.status, 200, 'not 400 from the framework')
  t.equal(origin.requests[0]?.method, 'QUERY')
  t.equal(origin.requests[0]?.headers['content-type'], undefined)
  t.equal(origin.requests[0]?.body, 'abc')
})

test('the app\'s hooks see the client\'s Content-Type, never a placeholder', async (t) => {
  const origin = await startOrigin(t)
  const seen: Array<[string, string | undefined]> = []
  const proxy = await startProxy(t, {}, (app) => {
    for (const hook of ['onRequest', 'preParsing', 'preValidation', 'preHandler'] as const) {
      app.addHook(hook, async (request: FastifyRequest) => { seen.push([hook, request.headers['content-type']]) })
    }
  })
  const empty = await rawExchange(proxy.port, `DELETE http://127.0.0.1:${origin.port}/a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  t.equal(empty.status, 200)
  const posted = await rawExchange(proxy.port, `POST http://127.0.0.1:${origin.port}/b HTTP/1.1\r\nHost: x\r\nContent-Type: bogus\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi`)
  t.equal(posted.status, 200)
  const hooks = ['onRequest', 'preParsing', 'preValidation', 'preHandler']
  t.same(seen, [...hooks.map((h) => [h, undefined]), ...hooks.map((h) => [h, 'bogus'])])
  t.equal(origin.requests[0]?.headers['content-type'], undefined, 'no Content-Type invented for a request without one')
  t.equal(origin.requests[1]?.headers['content-type'], 'bogus')
})

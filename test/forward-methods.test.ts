import { test } from 'tap'
import { METHODS } from 'node:http'
import Fastify from 'fastify'
import { forwardProxy } from '../lib/index'
import { LOOPBACK_TEST_POLICY, startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'

test('every method Node parses is forwarded with its body, not only Fastify\'s defaults', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  const methods = METHODS.filter((method) => method !== 'CONNECT' && method !== 'HEAD')
  for (const method of methods) {
    const res = await rawExchange(proxy.port, `${method} http://127.0.0.1:${origin.port}/m HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbody`)
    t.equal(res.status, 200, `${method} forwarded`)
    t.match(origin.requests.at(-1), { method, url: '/m', body: 'body' })
  }
  t.equal(origin.requests.length, methods.length)
})

test('after registration the app can route an added method, and its body is parsed', async (t) => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY })
  app.route({ method: 'PROPFIND', url: '/dav', handler: async (request) => ({ got: request.body }) })
  const res = await app.inject({ method: 'PROPFIND', url: '/dav', payload: { a: 1 } })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { got: { a: 1 } })
})

test('HEAD is forwarded; the origin\'s Content-Length is kept and no body follows', async (t) => {
  const origin = await startOrigin(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1234' })
    res.end()
  })
  const proxy = await startProxy(t)
  const res = await rawExchange(proxy.port, `HEAD http://127.0.0.1:${origin.port}/h HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  t.equal(res.status, 200)
  t.equal(origin.requests[0]?.method, 'HEAD')
  t.match(res.text, /\r\ncontent-length: 1234\r\n/i)
  t.ok(res.text.endsWith('\r\n\r\n'), 'no body')
})

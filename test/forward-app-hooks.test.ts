import { test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { startOrigin, startProxy, startSentinel } from './helpers/servers'
import { basic, rawExchange } from './helpers/raw-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

interface Sighting { hook: string, destination: unknown, user: unknown }

function recordHooks (seen: Sighting[]) {
  return (app: FastifyInstance): void => {
    app.addHook('onRequest', async (request) => {
      seen.push({ hook: 'onRequest', destination: request.proxyDestination, user: request.proxyUser })
    })
    app.addHook('preHandler', async (request) => {
      seen.push({ hook: 'preHandler', destination: request.proxyDestination, user: request.proxyUser })
    })
  }
}

test('the app\'s onRequest and preHandler hooks run first and see the proxy request', async (t) => {
  const origin = await startOrigin(t)
  const seen: Sighting[] = []
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } } }, recordHooks(seen))
  const res = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/x HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basic('alice', 's3cret')}\r\nConnection: close\r\n\r\n`)
  t.equal(res.status, 200)
  const destination = { host: '127.0.0.1', port: origin.port }
  t.same(seen, [
    { hook: 'onRequest', destination, user: null },
    { hook: 'preHandler', destination, user: { name: 'alice' } }
  ], 'onRequest runs before authentication, preHandler after it with the proxy user')
})

test('the app\'s hooks see origin-form requests with no proxy destination', async (t) => {
  const seen: Sighting[] = []
  const proxy = await startProxy(t, {}, (app) => {
    recordHooks(seen)(app)
    app.get('/app', async () => 'app')
  })
  const res = await rawExchange(proxy.port, 'GET /app HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
  t.equal(res.status, 200)
  t.same(seen.map((s) => s.destination), [null, null])
})

test('an app hook that replies 403 short-circuits the proxy, destination never contacted', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, {}, (app) => {
    app.addHook('onRequest', async (request, reply) => {
      if (request.proxyDestination?.port === sentinel.port) await reply.code(403).send('blocked by app')
    })
  })
  const res = await rawExchange(proxy.port, `GET http://127.0.0.1:${sentinel.port}/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  t.equal(res.status, 403)
  t.match(res.text, /blocked by app$/)
  await expectNothingDialedBefore(t, sentinel.accepts, 'the destination was never contacted')
})

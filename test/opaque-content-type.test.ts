import { test } from 'tap'
import Fastify, { type FastifyInstance, type FastifyRequest, type HTTPMethods } from 'fastify'
import type { Readable } from 'node:stream'
import { hideContentTypeFromFastify, leaveBodiesUnparsed, METHODS_WITHOUT_BODY_PARSING, restoreContentType } from './helpers/internals'

// The proxy route swaps a raw request header under Fastify (lib/opaque-content-type.ts). These
// tests hold the Fastify installed here to what that swap relies on, so a release that changes
// it fails here, by name, rather than as a forwarded request gone wrong.

/** The body of a request no parser read. */
async function unreadBody (request: FastifyRequest): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of request.raw as Readable) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString()
}

/** An app whose one catch-all route takes every method, with `setup` applied to its context. */
async function appWith (setup: (instance: FastifyInstance) => void, preParsing = false): Promise<FastifyInstance> {
  const app = Fastify()
  app.addHttpMethod('PROPFIND', { hasBody: true })
  await app.register(async (instance) => {
    setup(instance)
    instance.route({
      method: instance.supportedMethods as HTTPMethods[],
      url: '*',
      ...(preParsing ? { preParsing: hideContentTypeFromFastify } : {}),
      handler: async (request, reply) => {
        restoreContentType(request.raw)
        return await reply.send({ contentType: request.headers['content-type'] ?? null, body: await unreadBody(request) })
      }
    })
  })
  return app
}

test('Fastify judges Content-Type before any parser: 415 for one it cannot parse, 400 for a QUERY without one, even with a catch-all parser (the reason for the swap)', async (t) => {
  const app = await appWith((instance) => {
    instance.removeAllContentTypeParsers()
    instance.addContentTypeParser('*', (_request, _payload, done) => { done(null) })
  })
  t.teardown(() => app.close())
  const malformed = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'bogus' }, payload: 'hello' })
  t.equal(malformed.statusCode, 415, 'if Fastify stops refusing it, the swap in opaque-content-type.ts may go')
  const query = await app.inject({ method: 'QUERY', url: '/', payload: 'abc' })
  t.equal(query.statusCode, 400)
})

test('the methods whose Content-Type Fastify never looks at are the ones the swap leaves alone', async (t) => {
  const app = await appWith((instance) => {
    instance.removeAllContentTypeParsers()
    instance.addContentTypeParser('*', (_request, _payload, done) => { done(null) })
  })
  t.teardown(() => app.close())
  await app.ready()
  const unjudged: string[] = []
  for (const method of app.supportedMethods) {
    const res = await app.inject({ method: method as HTTPMethods, url: '/', headers: { 'content-type': 'bogus' }, payload: 'hello' })
    if (res.statusCode !== 415) unjudged.push(method)
  }
  t.same(unjudged.sort(), [...METHODS_WITHOUT_BODY_PARSING].filter((method) => app.supportedMethods.includes(method)).sort())
})

test('with the swap, every method with a body reaches the handler with its Content-Type as sent and its body unread', async (t) => {
  const seen: Array<string | undefined> = []
  const app = await appWith((instance) => {
    leaveBodiesUnparsed(instance)
    instance.addHook('preValidation', async (request) => { seen.push(request.headers['content-type']) })
  }, true)
  t.teardown(() => app.close())
  await app.ready()
  const methods = app.supportedMethods.filter((method) => !METHODS_WITHOUT_BODY_PARSING.has(method))
  t.ok(methods.includes('POST') && methods.includes('QUERY') && methods.includes('PROPFIND'))
  for (const method of methods) {
    const res = await app.inject({ method: method as HTTPMethods, url: '/', headers: { 'content-type': 'bogus' }, payload: 'hello' })
    t.equal(res.statusCode, 200, method)
    t.same(res.json(), { contentType: 'bogus', body: 'hello' }, method)
  }
  t.same(seen, methods.map(() => 'bogus'), 'a hook after preParsing sees the client\'s Content-Type, not the placeholder')
  const query = await app.inject({ method: 'QUERY', url: '/', payload: 'abc' })
  t.equal(query.statusCode, 200)
  t.same(query.json(), { contentType: null, body: 'abc' }, 'no Content-Type invented for a request without one')
})

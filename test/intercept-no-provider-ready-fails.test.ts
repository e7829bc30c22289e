import Fastify from 'fastify'
import { test } from 'tap'
import { forwardProxy, tlsInterception, ForwardProxyOptionsError } from '../lib/index'

test('without a certificate provider (no option, no decorator) fastify.ready() rejects with an error naming it', async (t) => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  await app.register(forwardProxy)
  await app.register(tlsInterception, { selector: { shouldIntercept: () => true } })
  const error = await app.ready().then(() => null, (caught: unknown) => caught)
  t.ok(error instanceof ForwardProxyOptionsError)
  t.match((error as Error).message, /option "certificateProvider" is required by tlsInterception/)
})

test('tlsInterception before forwardProxy fails registration (plugin dependency)', async (t) => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  app.register(tlsInterception, { certificateProvider: { getCertificate: () => null } })
  const error = await app.ready().then(() => null, (caught: unknown) => caught)
  t.match((error as Error | null)?.message, /fastify-forward-proxy/)
})

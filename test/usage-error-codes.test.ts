import { test } from 'tap'
import Fastify, { type FastifyError } from 'fastify'
import fp from 'fastify-plugin'
import type { AddressInfo } from 'node:net'
import { forwardProxy, tlsInterception } from '../lib/index'
import { LOOPBACK_TEST_POLICY, startOrigin } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { makeInterceptionPki } from './helpers/interception-pki'
import { staticProvider } from './helpers/intercepting-proxy'

test('addTransform once the server is ready: FFP_ERR_TRANSFORM_AFTER_READY', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(forwardProxy)
  await app.ready()
  t.throws(() => app.forwardProxy.addTransform({ transformRequest: () => {} }), { name: 'FastifyError', code: 'FFP_ERR_TRANSFORM_AFTER_READY', statusCode: 500 })
})

test('tlsInterception where no forwardProxy of this package is (another copy, say): FFP_ERR_INTERCEPTION_WITHOUT_PROXY', async (t) => {
  const pki = await makeInterceptionPki(t)
  const app = Fastify()
  t.teardown(() => app.close())
  // The plugin name tlsInterception depends on, without this copy's proxy behind it.
  await app.register(fp(async (instance) => { instance.decorate('forwardProxy', {} as never) }, { name: 'fastify-forward-proxy' }))
  await t.rejects(async () => { await app.register(tlsInterception, { certificateProvider: staticProvider(pki) }).ready() }, { code: 'FFP_ERR_INTERCEPTION_WITHOUT_PROXY' })
})

test('tlsInterception before forwardProxy: Fastify refuses it first, for the missing dependency', async (t) => {
  const pki = await makeInterceptionPki(t)
  const app = Fastify()
  t.teardown(() => app.close())
  await t.rejects(async () => { await app.register(tlsInterception, { certificateProvider: staticProvider(pki) }).ready() }, { code: 'FST_ERR_PLUGIN_DEPENDENCY_NOT_REGISTERED' })
})

test('tlsInterception registered twice: FFP_ERR_INTERCEPTION_REGISTERED_TWICE', async (t) => {
  const pki = await makeInterceptionPki(t)
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(forwardProxy)
  await app.register(tlsInterception, { certificateProvider: staticProvider(pki) })
  await t.rejects(async () => { await app.register(tlsInterception, { certificateProvider: staticProvider(pki) }).ready() }, { code: 'FFP_ERR_INTERCEPTION_REGISTERED_TWICE' })
})

test('tlsInterception in an inner plugin context: FFP_ERR_INTERCEPTION_OTHER_CONTEXT', async (t) => {
  const pki = await makeInterceptionPki(t)
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(forwardProxy)
  await t.rejects(async () => {
    await app.register(async (inner) => { await inner.register(tlsInterception, { certificateProvider: staticProvider(pki) }) }).ready()
  }, { code: 'FFP_ERR_INTERCEPTION_OTHER_CONTEXT' })
})

test('an application route declaring the proxy\'s constraint with another value: FFP_ERR_INVALID_PROXY_CONSTRAINT', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(forwardProxy)
  t.throws(() => app.get('/mine', { constraints: { fastifyForwardProxy: 'mine' } }, async () => 'mine'), { code: 'FFP_ERR_INVALID_PROXY_CONSTRAINT', message: 'fastifyForwardProxy constraint only takes "proxy"' })
})

test('a hook that sets request.tunnelMode to "intercept" without tlsInterception: 500 proxy_internal_error, the application\'s onError hook sees FFP_ERR_INTERCEPTION_NOT_REGISTERED', async (t) => {
  const origin = await startOrigin(t)
  const app = Fastify()
  t.teardown(() => app.close())
  const seen: Array<string | undefined> = []
  app.addHook('onError', async (_request, _reply, error: FastifyError) => { seen.push(error.code) })
  app.addHook('preHandler', async (request) => { if (request.method === 'CONNECT') request.tunnelMode = 'intercept' })
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const tunnel = await openTunnel((app.server.address() as AddressInfo).port, `127.0.0.1:${origin.port}`)
  tunnel.socket.destroy()
  t.equal(tunnel.status, 500)
  t.match(tunnel.head, /proxy-status: fastify-forward-proxy; error=proxy_internal_error/i)
  t.same(seen, ['FFP_ERR_INTERCEPTION_NOT_REGISTERED'])
})

test('attachServer or addOwnListener given something that is not a server: FFP_ERR_NOT_A_SERVER, and the proxy still works', async (t) => {
  const origin = await startOrigin(t)
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.throws(() => app.forwardProxy.attachServer({} as never), { name: 'FastifyError', code: 'FFP_ERR_NOT_A_SERVER', message: /attachServer takes a Node HTTP, HTTPS or HTTP\/2 server/ })
  t.throws(() => app.forwardProxy.addOwnListener({} as never), { code: 'FFP_ERR_NOT_A_SERVER', message: /addOwnListener/ })
  const tunnel = await openTunnel((app.server.address() as AddressInfo).port, `127.0.0.1:${origin.port}`)
  t.teardown(() => { tunnel.socket.destroy() })
  t.equal(tunnel.status, 200, 'nothing was changed: tunnels still open')
})

test('reconfigure or attachServer once the application is closing: FFP_ERR_PROXY_CLOSED (no capture file opened that nothing would close)', async (t) => {
  const app = Fastify()
  await app.register(forwardProxy)
  let duringClose: unknown
  // Runs after the proxy's own preClose hook: the application is closing.
  app.addHook('preClose', async () => {
    try {
      app.forwardProxy.reconfigure({})
    } catch (error) {
      duringClose = error
    }
  })
  await app.ready()
  await app.close()
  t.match(duringClose, { code: 'FFP_ERR_PROXY_CLOSED', message: /reconfigure cannot be called once the application is closing/ })
  t.throws(() => app.forwardProxy.reconfigure({}), { code: 'FFP_ERR_PROXY_CLOSED' })
  t.throws(() => app.forwardProxy.attachServer(app.server), { code: 'FFP_ERR_PROXY_CLOSED' })
})

test('forwardProxy registered under a route prefix: FFP_ERR_PROXY_UNDER_PREFIX at registration, not a proxy that serves only /api/...', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await t.rejects(async () => { await app.register(async (instance) => { await instance.register(forwardProxy) }, { prefix: '/api' }).ready() }, { code: 'FFP_ERR_PROXY_UNDER_PREFIX', message: /outside any route prefix \(here "\/api"\)/ })
})

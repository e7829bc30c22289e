import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import { test } from 'tap'
import { ProxyAgent, request } from 'undici'
import { forwardProxy, tlsInterception, type ForwardProxyCertificateProvider, type ForwardProxyInterceptionSelector } from '../lib/index'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'
import { LOOPBACK_TEST_POLICY } from './helpers/servers'
import { basic } from './helpers/raw-client'

test('non-generic registration: selector and provider decorated on the instance after tlsInterception, as per-request factories, decide per user', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY, auth: { users: { alice: 'pw', bob: 'pw' } } })
  await app.register(tlsInterception, { trustedDestinationCa: pki.destinationCa.cert })
  const factoryCalls: string[] = []
  app.decorate('forwardProxyInterceptionSelector', (req): ForwardProxyInterceptionSelector => {
    factoryCalls.push(`selector for ${req.proxyUser?.name ?? '-'}`)
    return { shouldIntercept: (inner) => inner.proxyUser?.name === 'alice' }
  })
  const provider = staticProvider(pki)
  app.decorate('forwardProxyCertificateProvider', (req): ForwardProxyCertificateProvider => {
    factoryCalls.push(`provider for ${req.proxyUser?.name ?? '-'}`)
    return provider
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const proxyUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`

  const alice = new ProxyAgent({ uri: proxyUrl, token: basic('alice', 'pw'), requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => alice.close())
  const intercepted = await request(`https://127.0.0.1:${origin.port}/alice`, { dispatcher: alice })
  t.equal(intercepted.statusCode, 200)
  await intercepted.body.dump()

  const bob = new ProxyAgent({ uri: proxyUrl, token: basic('bob', 'pw'), requestTls: { ca: pki.destinationCa.cert } })
  t.teardown(() => bob.close())
  const opaque = await request(`https://127.0.0.1:${origin.port}/bob`, { dispatcher: bob })
  t.equal(opaque.statusCode, 200, 'bob\'s tunnel is opaque: his client trusts the destination CA and reaches the origin directly')
  await opaque.body.dump()

  t.same(factoryCalls, ['selector for alice', 'provider for alice', 'selector for bob'])
  t.same(provider.asked, [`127.0.0.1:${origin.port}`])
})

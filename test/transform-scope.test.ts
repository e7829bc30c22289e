import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import { test, type Test } from 'tap'
import { ProxyAgent, request } from 'undici'
import { forwardProxy, tlsInterception, type ForwardProxyRequestTransform } from '../lib/index'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'
import { absoluteFormAgent } from './helpers/forward-client'
import { LOOPBACK_TEST_POLICY, startOrigin } from './helpers/servers'

/** A transform that appends its name to `x-order` on both sides and records every call. */
function tag (name: string, calls: string[]): ForwardProxyRequestTransform {
  return {
    appliesTo (_request, destination) {
      calls.push(`${name} appliesTo ${destination.port}`)
      return true
    },
    transformRequest (_request, destination, outgoing) {
      calls.push(`${name} request ${destination.port}`)
      outgoing.headers['x-order'] = `${String(outgoing.headers['x-order'] ?? '')}${name};`
    },
    transformResponse (_request, destination, response) {
      calls.push(`${name} response ${destination.port}`)
      response.headers['x-order'] = `${String(response.headers['x-order'] ?? '')}${name};`
    }
  }
}

interface BothWays {
  /** Sends `GET <path>` through the proxy as http:// forwarding; returns what the origin saw and the client got of `x-order`. */
  plain: (path: string) => Promise<{ sent: unknown, received: unknown }>
  /** Sends `GET <path>` inside an intercepted tunnel; the same. */
  intercepted: (path: string) => Promise<{ sent: unknown, received: unknown }>
  reconfigure: () => void
}

/**
 * A proxy with one transform of each kind (forwardProxy's option, tlsInterception's, then one
 * added with addTransform), an http:// origin and an https:// one, every tunnel intercepted.
 */
async function startBothWays (t: Test, calls: string[]): Promise<BothWays> {
  const pki = await makeInterceptionPki(t)
  const plainOrigin = await startOrigin(t)
  const tlsOrigin = await startTlsOrigin(t, pki)
  const app = Fastify({ logger: false })
  const proxyOptions = { destinations: LOOPBACK_TEST_POLICY, transforms: [tag('option', calls)] }
  await app.register(forwardProxy, proxyOptions)
  await app.register(tlsInterception, {
    trustedDestinationCa: pki.destinationCa.cert,
    selector: { shouldIntercept: () => true },
    certificateProvider: staticProvider(pki),
    transforms: [tag('interception', calls)]
  })
  app.forwardProxy.addTransform(tag('added', calls))
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const proxyUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const plainAgent = absoluteFormAgent(t, proxyUrl)
  const tunnelAgent = new ProxyAgent({ uri: proxyUrl, requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => tunnelAgent.close())
  return {
    async plain (path) {
      const res = await request(`http://127.0.0.1:${plainOrigin.port}${path}`, { dispatcher: plainAgent })
      await res.body.dump()
      if (res.statusCode !== 200) throw new Error(`http:// request answered ${res.statusCode}`)
      return { sent: plainOrigin.requests.find((seen) => seen.url === path)?.headers['x-order'], received: res.headers['x-order'] }
    },
    async intercepted (path) {
      const res = await request(`https://127.0.0.1:${tlsOrigin.port}${path}`, { dispatcher: tunnelAgent })
      await res.body.dump()
      if (res.statusCode !== 200) throw new Error(`intercepted request answered ${res.statusCode}`)
      return { sent: tlsOrigin.requests.find((seen) => seen.url === path)?.headers['x-order'], received: res.headers['x-order'] }
    },
    reconfigure: () => app.forwardProxy.reconfigure(proxyOptions)
  }
}

test('a transform given to tlsInterception runs inside intercepted tunnels, never on http:// forwarding (not even asked whether it applies), also after a reconfiguration', async (t) => {
  const calls: string[] = []
  const proxy = await startBothWays(t, calls)

  t.same(await proxy.plain('/plain'), { sent: 'option;added;', received: 'option;added;' })
  t.same(calls.filter((call) => call.startsWith('interception')), [], 'tlsInterception\'s transform was not called for the http:// request')

  t.same(await proxy.intercepted('/intercepted'), { sent: 'option;interception;added;', received: 'option;interception;added;' })
  t.ok(calls.some((call) => call.startsWith('interception request')), 'it ran for the intercepted request')

  proxy.reconfigure()
  calls.length = 0
  t.same(await proxy.plain('/plain-again'), { sent: 'option;added;', received: 'option;added;' })
  t.same(calls.filter((call) => call.startsWith('interception')), [], 'still not after a reconfiguration')
})

test('transforms given to forwardProxy (its option, addTransform) run on http:// forwarding and inside intercepted tunnels alike, in registration order', async (t) => {
  const calls: string[] = []
  const proxy = await startBothWays(t, calls)

  const plain = await proxy.plain('/plain')
  t.same(plain, { sent: 'option;added;', received: 'option;added;' }, 'http:// forwarding: the request and the response')
  const intercepted = await proxy.intercepted('/intercepted')
  t.same(intercepted, { sent: 'option;interception;added;', received: 'option;interception;added;' }, 'inside an intercepted tunnel: every transform, tlsInterception\'s where it was registered')

  proxy.reconfigure()
  t.same(await proxy.plain('/plain-again'), plain, 'a reconfiguration keeps them')
  t.same(await proxy.intercepted('/intercepted-again'), intercepted)
})

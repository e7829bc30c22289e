import { test } from 'tap'
import { ProxyAgent, request } from 'undici'
import type { ForwardProxyDestination, ForwardProxyInterception, ForwardProxyUser } from '../lib/index'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'
import { basic } from './helpers/raw-client'

test('a tunnel the selector picks is intercepted; the request inside reaches the HTTPS origin after the app\'s onRequest hook saw request.interception and request.proxyUser', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const selectorCalls: Array<{ user: ForwardProxyUser | null, destination: ForwardProxyDestination }> = []
  const seenByHook: Array<{ interception: ForwardProxyInterception | null, user: ForwardProxyUser | null, target: string }> = []
  const provider = staticProvider(pki)
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { auth: { users: { alice: 's3cret' } } },
    interception: {
      certificateProvider: provider,
      selector: {
        shouldIntercept (request, destination) {
          selectorCalls.push({ user: request.proxyUser, destination })
          return true
        }
      }
    },
    setup (app) {
      app.addHook('onRequest', async (request) => {
        seenByHook.push({ interception: request.interception, user: request.proxyUser, target: request.originalUrl })
      })
    }
  })

  const agent = new ProxyAgent({ uri: proxy.url, token: basic('alice', 's3cret'), requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())
  const response = await request(`https://127.0.0.1:${origin.port}/inside?q=1`, { dispatcher: agent, headers: { 'x-client': 'yes' } })
  const echoed = await response.body.json() as { url: string, headers: Record<string, string>, httpVersion: string }

  t.equal(response.statusCode, 200)
  t.equal(echoed.url, '/inside?q=1')
  t.equal(echoed.headers['x-client'], 'yes')
  t.equal(echoed.headers.host, `127.0.0.1:${origin.port}`)
  t.equal(echoed.headers['proxy-authorization'], undefined)
  t.match(echoed.headers.via, /fastify-forward-proxy/)
  t.same(selectorCalls, [{ user: { name: 'alice' }, destination: { host: '127.0.0.1', port: origin.port } }], 'the selector ran once, with the user set')
  t.same(provider.asked, [`127.0.0.1:${origin.port}`])
  const inside = seenByHook.filter((seen) => seen.interception !== null)
  t.equal(inside.length, 1)
  t.same(inside[0]?.interception, { destination: { host: '127.0.0.1', port: origin.port } })
  t.same(inside[0]?.user, { name: 'alice' })
  const connect = seenByHook.find((seen) => seen.interception === null)
  t.equal(connect?.target, `127.0.0.1:${origin.port}`, 'the CONNECT itself went through the hook without request.interception')
  t.equal(proxy.app.forwardProxy.interceptionAddress, 'https://forward-proxy-tls-interception')
})

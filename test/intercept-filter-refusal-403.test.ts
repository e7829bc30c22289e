import { test } from 'tap'
import type { ForwardProxyUser } from '../lib/index'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'
import { basic, openTunnel } from './helpers/raw-client'

test('destination filter: after auth and policy, a filter returning false refuses the CONNECT with 403 http_request_denied before the selector runs and before any dial', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const filterSaw: Array<ForwardProxyUser | null> = []
  let selectorCalls = 0
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { auth: { users: { alice: 'pw', bob: 'pw' } } },
    interception: {
      certificateProvider: staticProvider(pki),
      selector: { shouldIntercept: () => { selectorCalls++; return false } },
      destinationFilters: [{
        allowTunnel (request) {
          filterSaw.push(request.proxyUser)
          if (request.proxyUser?.name === 'mallory') throw new Error('filter bug')
          return request.proxyUser?.name === 'alice'
        }
      }]
    }
  })
  const target = `127.0.0.1:${origin.port}`

  const unauthenticated = await openTunnel(proxy.port, target)
  t.equal(unauthenticated.status, 407, 'authentication runs first')
  unauthenticated.socket.destroy()
  t.same(filterSaw, [], 'the filter never sees an unauthenticated CONNECT')

  const refused = await openTunnel(proxy.port, target, { 'Proxy-Authorization': basic('bob', 'pw') })
  t.equal(refused.status, 403)
  t.match(refused.head, /\r\nproxy-status: fastify-forward-proxy; error=http_request_denied; details="refused by a destination filter"/i)
  refused.socket.destroy()
  t.equal(selectorCalls, 0, 'the selector never ran for the refused tunnel')

  const allowed = await openTunnel(proxy.port, target, { 'Proxy-Authorization': basic('alice', 'pw') })
  t.equal(allowed.status, 200, 'an allowed tunnel goes on (opaque here)')
  allowed.socket.destroy()
  t.equal(selectorCalls, 1)
  t.same(filterSaw, [{ name: 'bob' }, { name: 'alice' }])
})

test('destination filter: a filter that throws answers 500 proxy_internal_error without details of the error', async (t) => {
  const pki = await makeInterceptionPki(t)
  const proxy = await startInterceptingProxy(t, pki, {
    interception: {
      certificateProvider: staticProvider(pki),
      destinationFilters: [{ allowTunnel: () => { throw new Error('secret filter failure') } }]
    }
  })
  const tunnel = await openTunnel(proxy.port, 'example.com:443')
  t.equal(tunnel.status, 500)
  t.match(tunnel.head, /error=proxy_internal_error/)
  t.notMatch(tunnel.head + tunnel.rest.toString(), /secret/)
  tunnel.socket.destroy()
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

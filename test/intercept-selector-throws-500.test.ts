import { test } from 'tap'
import type { ForwardProxyInterceptionSelector } from '../lib/index'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'
import { openTunnel } from './helpers/raw-client'

type SelectorOption = ForwardProxyInterceptionSelector | (() => ForwardProxyInterceptionSelector)

const FAILING_SELECTORS: ReadonlyArray<{ readonly how: string, readonly selector: SelectorOption }> = [
  { how: 'throws at once', selector: { shouldIntercept: () => { throw new Error('secret selector failure') } } },
  { how: 'rejects', selector: { shouldIntercept: async () => { throw new Error('secret selector failure') } } },
  { how: 'has a factory that throws', selector: () => { throw new Error('secret selector failure') } }
]

for (const { how, selector } of FAILING_SELECTORS) {
  test(`interception selector: one that ${how} answers the CONNECT 500 proxy_internal_error without details of the error, with nothing dialed and its tunnel slot given back`, async (t) => {
    const pki = await makeInterceptionPki(t)
    const origin = await startTlsOrigin(t, pki)
    const proxy = await startInterceptingProxy(t, pki, { interception: { certificateProvider: staticProvider(pki), selector } })
    const tunnel = await openTunnel(proxy.port, `127.0.0.1:${origin.port}`)
    t.equal(tunnel.status, 500)
    t.match(tunnel.head, /error=proxy_internal_error/)
    t.notMatch(tunnel.head + tunnel.rest.toString(), /secret/)
    tunnel.socket.destroy()
    await expectNothingDialedBefore(t, origin.accepts)
    t.equal(proxy.app.forwardProxy.activeTunnels, 0)
  })
}

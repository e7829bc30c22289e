import { test } from 'tap'
import { ProxyAgent, request } from 'undici'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'
import { installMetrics } from './helpers/metric-reader'

test('an intercepted CONNECT counts forward_proxy.kind=connect and forward_proxy.outcome=intercepted once per tunnel, and each request inside forward_proxy.kind=intercepted', async (t) => {
  const installed = installMetrics(t)
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  const agent = new ProxyAgent({ uri: proxy.url, requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())
  for (const path of ['/one', '/two', '/three']) {
    const response = await request(`https://127.0.0.1:${origin.port}${path}`, { dispatcher: agent })
    await response.body.dump()
  }
  const collected = await installed.collect('forward_proxy.requests')
  const value = (attributes: Record<string, string>): number =>
    collected?.points.find((point) => JSON.stringify(point.attributes) === JSON.stringify(attributes))?.value ?? 0
  // undici may open more than one tunnel for the three requests; every one of them was intercepted.
  const connects = value({ 'forward_proxy.kind': 'connect' })
  t.ok(connects >= 1)
  t.equal(value({ 'forward_proxy.outcome': 'intercepted' }), connects, 'each CONNECT counted as intercepted once')
  t.equal(value({ 'forward_proxy.kind': 'intercepted' }), 3)
})

import { test } from 'tap'
import { ProxyAgent, request } from 'undici'
import { installMetrics } from './helpers/metric-reader'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'

test('an intercepted tunnel counts forward_proxy.kind=connect once and forward_proxy.outcome=intercepted once; each of 3 HTTP/1.1 requests on it (undici ProxyAgent, keep-alive) counts forward_proxy.kind=intercepted', async (t) => {
  const installed = installMetrics(t)
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const provider = staticProvider(pki)
  let selectorCalls = 0
  const insideVersions: string[] = []
  const proxy = await startInterceptingProxy(t, pki, {
    interception: { certificateProvider: provider, selector: { shouldIntercept: () => { selectorCalls++; return true } } },
    setup (app) { app.addHook('onRequest', async (request) => { if (request.interception !== null) insideVersions.push(request.raw.httpVersion) }) }
  })
  t.equal(await installed.collect('forward_proxy.requests'), undefined, 'nothing counted before any request')

  // One connection (pipelining 1, requests one after another): the three requests share a tunnel.
  const agent = new ProxyAgent({ uri: proxy.url, connections: 1, requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())
  for (const path of ['/one', '/two', '/three']) {
    const response = await request(`https://127.0.0.1:${origin.port}${path}`, { dispatcher: agent })
    t.equal(response.statusCode, 200, path)
    await response.body.dump()
  }

  t.same(origin.requests.map((seen) => seen.url), ['/one', '/two', '/three'])
  t.same(insideVersions, ['1.1', '1.1', '1.1'], 'HTTP/1.1 inside the tunnel')
  t.equal(selectorCalls, 1, 'one tunnel carried all three requests')
  t.equal(provider.asked.length, 1, 'one client handshake')
  const metric = await installed.collect('forward_proxy.requests')
  t.same(sortPoints(metric?.points ?? []), [
    { value: 1, attributes: { 'forward_proxy.kind': 'connect' } },
    { value: 3, attributes: { 'forward_proxy.kind': 'intercepted' } },
    { value: 1, attributes: { 'forward_proxy.outcome': 'intercepted' } }
  ])
})

/** Data points in a stable order (by their single attribute), for an exact comparison. */
function sortPoints<P extends { attributes: Record<string, unknown> }> (points: P[]): P[] {
  const key = (point: P): string => JSON.stringify(point.attributes)
  return [...points].sort((a, b) => key(a).localeCompare(key(b)))
}

import { test } from 'tap'
import { installMetrics } from './helpers/metric-reader'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'
import { http2OverTls, http2Request, openInterceptedTls } from './helpers/intercepted-client'

test('an intercepted tunnel spoken as HTTP/2 inside counts forward_proxy.kind=connect once, forward_proxy.outcome=intercepted once, and forward_proxy.kind=intercepted for each of its 3 concurrent streams', async (t) => {
  const installed = installMetrics(t)
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const insideVersions: string[] = []
  const proxy = await startInterceptingProxy(t, pki, {
    interception: { certificateProvider: staticProvider(pki), selector: { shouldIntercept: () => true } },
    setup (app) { app.addHook('onRequest', async (request) => { if (request.interception !== null) insideVersions.push(request.raw.httpVersion) }) }
  })
  const target = `127.0.0.1:${origin.port}`
  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert, alpn: ['h2'] })
  t.equal(socket.alpnProtocol, 'h2')
  const session = await http2OverTls(t, socket, target)

  const responses = await Promise.all(['/one', '/two', '/three'].map((path) => http2Request(session, { ':path': path, ':authority': target })))
  t.same(responses.map((response) => response.status), [200, 200, 200])
  t.same(origin.requests.map((seen) => seen.url).sort(), ['/one', '/three', '/two'])
  t.same(insideVersions, ['2.0', '2.0', '2.0'], 'HTTP/2 inside the tunnel')

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

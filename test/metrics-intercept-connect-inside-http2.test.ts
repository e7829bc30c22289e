import { test } from 'tap'
import { installMetrics } from './helpers/metric-reader'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'
import { http2OverTls, http2Request, openInterceptedTls } from './helpers/intercepted-client'
import { startSentinel } from './helpers/servers'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('an HTTP/2 CONNECT stream inside an intercepted tunnel gets 400, opens nothing, counts as forward_proxy.kind=intercepted and never as kind=connect; the session goes on', async (t) => {
  const installed = installMetrics(t)
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const sentinel = await startSentinel(t)
  let selectorCalls = 0
  const hooksSaw: string[] = []
  const proxy = await startInterceptingProxy(t, pki, {
    interception: { certificateProvider: staticProvider(pki), selector: { shouldIntercept: () => { selectorCalls++; return true } } },
    setup (app) { app.addHook('onRequest', async (request) => { if (request.interception !== null) hooksSaw.push(`${request.method} ${request.url}`) }) }
  })
  const target = `127.0.0.1:${origin.port}`
  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert, alpn: ['h2'] })
  const session = await http2OverTls(t, socket, target)

  const inner = await http2Request(session, { ':method': 'CONNECT', ':authority': `127.0.0.1:${sentinel.port}` })
  t.equal(inner.status, 400)
  t.match(inner.headers['proxy-status'], /^fastify-forward-proxy; error=http_request_error; details="CONNECT inside an intercepted tunnel"/)
  const after = await http2Request(session, { ':path': '/after', ':authority': target })
  t.equal(after.status, 200, 'the session carries on')

  await expectNothingDialedBefore(t, sentinel.accepts, 'no tunnel was dialed from inside the tunnel')
  t.equal(selectorCalls, 1)
  t.equal(proxy.app.forwardProxy.activeTunnels, 1, 'only the outer tunnel is open')
  t.same(hooksSaw, ['GET /after'], 'the refused CONNECT never reached the app hooks')
  const metric = await installed.collect('forward_proxy.requests')
  t.same(sortPoints(metric?.points ?? []), [
    { value: 1, attributes: { 'forward_proxy.kind': 'connect' } },
    { value: 2, attributes: { 'forward_proxy.kind': 'intercepted' } },
    { value: 1, attributes: { 'forward_proxy.outcome': 'intercepted' } }
  ], 'one tunnel; the CONNECT and the GET inside it')
})

/** Data points in a stable order (by their single attribute), for an exact comparison. */
function sortPoints<P extends { attributes: Record<string, unknown> }> (points: P[]): P[] {
  const key = (point: P): string => JSON.stringify(point.attributes)
  return [...points].sort((a, b) => key(a).localeCompare(key(b)))
}

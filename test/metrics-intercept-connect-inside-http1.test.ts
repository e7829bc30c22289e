import type { TLSSocket } from 'node:tls'
import { test } from 'tap'
import { installMetrics } from './helpers/metric-reader'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'
import { openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'
import { startSentinel } from './helpers/servers'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

/** Reads one complete response with a Content-Length body off a keep-alive TLS socket. */
function readOneResponse (socket: TLSSocket): Promise<{ status: number, head: string }> {
  return new Promise((resolve, reject) => {
    let text = ''
    const onData = (chunk: Buffer): void => {
      text += chunk.toString('latin1')
      const end = text.indexOf('\r\n\r\n')
      if (end === -1) return
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(text.slice(0, end))?.[1] ?? 0)
      if (text.length < end + 4 + length) return
      socket.removeListener('data', onData)
      socket.removeListener('close', onClose)
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), head: text.slice(0, end) })
    }
    const onClose = (): void => reject(new Error(`closed before a whole response; got: ${text}`))
    socket.on('data', onData)
    socket.once('close', onClose)
  })
}

test('an HTTP/1.1 CONNECT inside an intercepted tunnel (first or after a request) gets 400, opens nothing, and counts as forward_proxy.kind=intercepted, never as kind=connect', async (t) => {
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
  const inner = `CONNECT 127.0.0.1:${sentinel.port} HTTP/1.1\r\nHost: 127.0.0.1:${sentinel.port}\r\n\r\n`

  // The CONNECT as the first request on the tunnel's TLS connection.
  const first = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
  const firstAnswer = await rawTlsExchange(first, inner)
  t.equal(firstAnswer.status, 400, 'first request on the connection')
  t.match(firstAnswer.head, /\r\nproxy-status: fastify-forward-proxy; error=http_request_error; details="CONNECT inside an intercepted tunnel"/i)

  // The CONNECT after an ordinary request on the same TLS connection: still 400 (not the 501
  // of a later CONNECT on a proxy listener), the rule inside a tunnel being origin-form only.
  const second = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
  second.write(`GET /before HTTP/1.1\r\nHost: ${target}\r\n\r\n`)
  t.equal((await readOneResponse(second)).status, 200, 'an ordinary request first')
  const secondAnswer = await rawTlsExchange(second, inner)
  t.equal(secondAnswer.status, 400, 'after a request on the connection')
  t.match(secondAnswer.head, /\r\nproxy-status: fastify-forward-proxy; error=http_request_error; details="CONNECT inside an intercepted tunnel"/i)

  await expectNothingDialedBefore(t, sentinel.accepts, 'no tunnel was dialed from inside a tunnel')
  t.equal(selectorCalls, 2, 'the selector ran for the two real tunnels only')
  t.same(origin.requests.map((seen) => seen.url), ['/before'])
  t.same(hooksSaw, [`GET /before`], 'the refused CONNECTs never reached the app hooks')
  const metric = await installed.collect('forward_proxy.requests')
  t.same(sortPoints(metric?.points ?? []), [
    { value: 2, attributes: { 'forward_proxy.kind': 'connect' } },
    { value: 3, attributes: { 'forward_proxy.kind': 'intercepted' } },
    { value: 2, attributes: { 'forward_proxy.outcome': 'intercepted' } }
  ], 'two tunnels; two CONNECTs and one GET inside them')
})

/** Data points in a stable order (by their single attribute), for an exact comparison. */
function sortPoints<P extends { attributes: Record<string, unknown> }> (points: P[]): P[] {
  const key = (point: P): string => JSON.stringify(point.attributes)
  return [...points].sort((a, b) => key(a).localeCompare(key(b)))
}

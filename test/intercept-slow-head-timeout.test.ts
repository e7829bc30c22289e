import { test } from 'tap'
import type { TLSSocket } from 'node:tls'
import type { FastifyServerOptions } from 'fastify'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'
import { openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const HEADERS_TIMEOUT = 400

/** Writes `text` one byte every `intervalMs` until it is written or the socket closes; resolves with what the server sent and when it closed. */
function trickle (socket: TLSSocket, text: string, intervalMs: number): Promise<{ received: string, closedAfter: number, bytesSent: number }> {
  return new Promise((resolve) => {
    const started = Date.now()
    const chunks: Buffer[] = []
    let sent = 0
    const timer = setInterval(() => {
      if (sent >= text.length || socket.destroyed) return
      socket.write(text[sent] as string)
      sent++
    }, intervalMs)
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.once('close', () => {
      clearInterval(timer)
      resolve({ received: Buffer.concat(chunks).toString('latin1'), closedAfter: Date.now() - started, bytesSent: sent })
    })
  })
}

test('a request head trickled one byte at a time inside an intercepted tunnel is answered 408 and closed at the host server\'s headersTimeout; a normal request still works', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, {
    interception: interceptAll(pki),
    // Fastify passes `http` to http.createServer; its types do not list it for a plain server.
    server: { http: { headersTimeout: HEADERS_TIMEOUT, requestTimeout: 0, connectionsCheckingInterval: 50 } } as FastifyServerOptions
  })
  const target = `127.0.0.1:${origin.port}`

  const slow = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
  const head = `GET /slow HTTP/1.1\r\nHost: ${target}\r\nX-Padding: ${'x'.repeat(200)}\r\n\r\n`
  const outcome = await trickle(slow, head, 50)
  t.ok(outcome.bytesSent < head.length, `closed before the head was complete (${outcome.bytesSent} of ${head.length} bytes)`)
  t.ok(outcome.closedAfter >= HEADERS_TIMEOUT, `not before headersTimeout (${outcome.closedAfter} ms)`)
  t.ok(outcome.closedAfter < HEADERS_TIMEOUT + 2000, `soon after headersTimeout (${outcome.closedAfter} ms)`)
  t.match(outcome.received, /^HTTP\/1\.1 408 /)
  t.match(outcome.received, /proxy-status: fastify-forward-proxy; error=http_request_error/i)
  await expectNothingDialedBefore(t, origin.accepts, 'nothing reached the destination')

  const normal = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
  const res = await rawTlsExchange(normal, `GET /normal HTTP/1.1\r\nHost: ${target}\r\nConnection: close\r\n\r\n`)
  t.equal(res.status, 200)
  t.same(origin.requests.map((seen) => seen.url), ['/normal'])
})

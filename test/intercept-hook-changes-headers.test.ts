import { test, type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll, type SeenRequest } from './helpers/intercepting-proxy'
import { http2OverTls, http2Request, openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'
import { startOrigin } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'

/** The application's hook: edits headers of requests inside intercepted tunnels only. */
function editInsideTunnels (app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    if (request.interception === null || request.url === '/read-only') return
    request.headers['x-tenant'] = 'blue'
    request.headers['x-replace'] = 'new'
    delete request.headers.cookie
  })
}

/** An HTTPS origin behind a proxy that intercepts every tunnel and runs {@link editInsideTunnels}. */
async function startEditing (t: Test) {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, {
    interception: interceptAll(pki),
    setup: editInsideTunnels
  })
  return { pki, origin, proxy, target: `127.0.0.1:${origin.port}` }
}

/** The headers the destination saw carry the hook's edits and the client's `X-Kept` value. */
function expectEdited (t: Test, seen: SeenRequest['headers'] | undefined, kept: string): void {
  t.equal(seen?.['x-tenant'], 'blue')
  t.equal(seen?.['x-replace'], 'new')
  t.equal(seen?.cookie, undefined)
  t.equal(seen?.['x-kept'], kept)
}

test('a hook adds, replaces and removes headers of a request inside an intercepted tunnel (HTTP/1.1 inside) and the destination sees exactly that', async (t) => {
  const { pki, origin, proxy, target } = await startEditing(t)
  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
  const head = ['GET /edited HTTP/1.1', `Host: ${target}`, 'X-Replace: old', 'Cookie: secret=1', 'X-Kept: Kept', 'Connection: close']
  const res = await rawTlsExchange(socket, `${head.join('\r\n')}\r\n\r\n`)
  t.equal(res.status, 200)
  expectEdited(t, origin.requests[0]?.headers, 'Kept')
})

test('a hook edits headers of a request inside an intercepted tunnel (HTTP/2 inside); pseudo-headers are never forwarded', async (t) => {
  const { pki, origin, proxy, target } = await startEditing(t)
  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert, alpn: ['h2'] })
  const session = await http2OverTls(t, socket, target)
  const res = await http2Request(session, { ':path': '/h2', ':authority': target, 'x-replace': 'old', cookie: ['a=1', 'b=2'], 'x-kept': 'kept' })
  t.equal(res.status, 200)
  expectEdited(t, origin.requests[0]?.headers, 'kept')
  t.equal(origin.requests[0]?.headers.host, target)
})

test('a hook that checks request.interception leaves http:// forwarding alone, and a hook that only reads keeps the raw order and case', async (t) => {
  const pki = await makeInterceptionPki(t)
  const tlsOrigin = await startTlsOrigin(t, pki)
  const plainOrigin = await startOrigin(t)
  const proxy = await startInterceptingProxy(t, pki, {
    interception: interceptAll(pki),
    setup (app) {
      editInsideTunnels(app)
      app.addHook('preHandler', async (request) => { void request.headers['x-replace'] })
    }
  })
  const plain = await rawExchange(proxy.port, `GET http://127.0.0.1:${plainOrigin.port}/plain HTTP/1.1\r\nHost: x\r\nX-Replace: old\r\nCookie: a=1\r\nConnection: close\r\n\r\n`)
  t.equal(plain.status, 200)
  t.equal(plainOrigin.requests[0]?.headers['x-replace'], 'old')
  t.equal(plainOrigin.requests[0]?.headers.cookie, 'a=1')
  t.equal(plainOrigin.requests[0]?.headers['x-tenant'], undefined)

  const target = `127.0.0.1:${tlsOrigin.port}`
  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
  const res = await rawTlsExchange(socket, `GET /read-only HTTP/1.1\r\nHost: ${target}\r\nx-B: 2\r\nX-a: 1\r\nx-B: 3\r\nConnection: close\r\n\r\n`)
  t.equal(res.status, 200)
  const raw = tlsOrigin.requests[0]?.rawHeaders ?? []
  const lines = raw.flatMap((name, i) => i % 2 === 0 ? [`${name}: ${raw[i + 1] ?? ''}`] : [])
  t.same(lines.filter((line) => /^x-/i.test(line)), ['x-B: 2', 'X-a: 1', 'x-B: 3'], 'names, case, order and repeats as received')
})

import type { TLSSocket } from 'node:tls'
import { test, type Test } from 'tap'
import { ProxyAgent, request } from 'undici'
import { installMetrics } from './helpers/metric-reader'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'
import { http2OverTls, http2Request, openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'
import { startSentinel } from './helpers/servers'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

/**
 * Metrics installed, an HTTPS origin and a proxy that intercepts every tunnel, counting its
 * selector calls and recording each request inside a tunnel that reaches the app's hooks.
 */
async function startCountedInterception (t: Test) {
  const installed = installMetrics(t)
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const provider = staticProvider(pki)
  const seen = { selectorCalls: 0, hooks: [] as string[], insideVersions: [] as string[] }
  const proxy = await startInterceptingProxy(t, pki, {
    interception: { certificateProvider: provider, selector: { shouldIntercept: () => { seen.selectorCalls++; return true } } },
    setup (app) {
      app.addHook('onRequest', async (request) => {
        if (request.interception === null) return
        seen.hooks.push(`${request.method} ${request.url}`)
        seen.insideVersions.push(request.raw.httpVersion)
      })
    }
  })
  const target = `127.0.0.1:${origin.port}`
  return { installed, pki, origin, provider, proxy, seen, target }
}

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

/** forward_proxy.requests once `tunnels` intercepted tunnels have carried `inside` requests between them. */
function requestCounts (tunnels: number, inside: number): Record<string, number> {
  return {
    '{"forward_proxy.kind":"connect"}': tunnels,
    '{"forward_proxy.kind":"intercepted"}': inside,
    '{"forward_proxy.outcome":"intercepted"}': tunnels
  }
}

test('an intercepted tunnel counts forward_proxy.kind=connect once and forward_proxy.outcome=intercepted once; each of 3 HTTP/1.1 requests on it (undici ProxyAgent, keep-alive) counts forward_proxy.kind=intercepted', async (t) => {
  const { installed, pki, origin, provider, proxy, seen } = await startCountedInterception(t)
  t.equal(await installed.collect('forward_proxy.requests'), undefined, 'nothing counted before any request')

  // One connection (pipelining 1, requests one after another): the three requests share a tunnel.
  const agent = new ProxyAgent({ uri: proxy.url, connections: 1, requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())
  for (const path of ['/one', '/two', '/three']) {
    const response = await request(`https://127.0.0.1:${origin.port}${path}`, { dispatcher: agent })
    t.equal(response.statusCode, 200, path)
    await response.body.dump()
  }

  t.same(origin.requests.map((request) => request.url), ['/one', '/two', '/three'])
  t.same(seen.insideVersions, ['1.1', '1.1', '1.1'], 'HTTP/1.1 inside the tunnel')
  t.equal(seen.selectorCalls, 1, 'one tunnel carried all three requests')
  t.equal(provider.asked.length, 1, 'one client handshake')
  t.strictSame(await installed.sums('forward_proxy.requests'), requestCounts(1, 3))
})

test('an intercepted tunnel spoken as HTTP/2 inside counts forward_proxy.kind=connect once, forward_proxy.outcome=intercepted once, and forward_proxy.kind=intercepted for each of its 3 concurrent streams', async (t) => {
  const { installed, pki, origin, proxy, seen, target } = await startCountedInterception(t)
  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert, alpn: ['h2'] })
  t.equal(socket.alpnProtocol, 'h2')
  const session = await http2OverTls(t, socket, target)

  const responses = await Promise.all(['/one', '/two', '/three'].map((path) => http2Request(session, { ':path': path, ':authority': target })))
  t.same(responses.map((response) => response.status), [200, 200, 200])
  t.same(origin.requests.map((request) => request.url).sort(), ['/one', '/three', '/two'])
  t.same(seen.insideVersions, ['2.0', '2.0', '2.0'], 'HTTP/2 inside the tunnel')
  t.strictSame(await installed.sums('forward_proxy.requests'), requestCounts(1, 3))
})

test('an HTTP/1.1 CONNECT inside an intercepted tunnel (first or after a request) gets 400, opens nothing, and counts as forward_proxy.kind=intercepted, never as kind=connect', async (t) => {
  const { installed, pki, origin, proxy, seen, target } = await startCountedInterception(t)
  const sentinel = await startSentinel(t)
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
  t.equal(seen.selectorCalls, 2, 'the selector ran for the two real tunnels only')
  t.same(origin.requests.map((request) => request.url), ['/before'])
  t.same(seen.hooks, ['GET /before'], 'the refused CONNECTs never reached the app hooks')
  t.strictSame(await installed.sums('forward_proxy.requests'), requestCounts(2, 3), 'two tunnels; two CONNECTs and one GET inside them')
})

test('an HTTP/2 CONNECT stream inside an intercepted tunnel gets 400, opens nothing, counts as forward_proxy.kind=intercepted and never as kind=connect; the session goes on', async (t) => {
  const { installed, pki, proxy, seen, target } = await startCountedInterception(t)
  const sentinel = await startSentinel(t)
  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert, alpn: ['h2'] })
  const session = await http2OverTls(t, socket, target)

  const inner = await http2Request(session, { ':method': 'CONNECT', ':authority': `127.0.0.1:${sentinel.port}` })
  t.equal(inner.status, 400)
  t.match(inner.headers['proxy-status'], /^fastify-forward-proxy; error=http_request_error; details="CONNECT inside an intercepted tunnel"/)
  const after = await http2Request(session, { ':path': '/after', ':authority': target })
  t.equal(after.status, 200, 'the session carries on')

  await expectNothingDialedBefore(t, sentinel.accepts, 'no tunnel was dialed from inside the tunnel')
  t.equal(seen.selectorCalls, 1)
  t.equal(proxy.app.forwardProxy.activeTunnels, 1, 'only the outer tunnel is open')
  t.same(seen.hooks, ['GET /after'], 'the refused CONNECT never reached the app hooks')
  t.strictSame(await installed.sums('forward_proxy.requests'), requestCounts(1, 2), 'one tunnel; the CONNECT and the GET inside it')
})

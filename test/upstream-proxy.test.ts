import { test, type Test } from 'tap'
import { once } from 'node:events'
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'
import Fastify, { type FastifyInstance } from 'fastify'
import { ProxyAgent, request } from 'undici'
import { startOrigin, startProxy, startSentinel, type Proxy } from './helpers/servers'
import { startTcpDestination, echoesThrough } from './helpers/tcp-destination'
import { basic, openTunnel, rawExchange } from './helpers/raw-client'
import { closedPort } from './helpers/closed-port'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'
import { capturedLog } from './helpers/captured-log'
import { compileUpstreamProxies } from './helpers/internals'
import { certificateDirectory, issueLeaf, makeCa } from './helpers/destination-certificates'
import { forwardProxy } from '../lib/index'
import { LOOPBACK_TEST_POLICY } from './helpers/servers'
import { deferred } from './helpers/deferred'

interface Seen { method: string, url: string, authorization: string | undefined }

/** A second instance of ours as the upstream: Basic user `up`/`up-secret`, pseudonym `upstream`; records what reaches it. */
async function startUpstream (t: Test): Promise<Proxy & { seen: Seen[] }> {
  const seen: Seen[] = []
  const proxy = await startProxy(t, { via: 'upstream', auth: { users: { up: 'up-secret' } } }, (app: FastifyInstance) => {
    // originalUrl: the target as received (a CONNECT's url is "/", the path it is routed under).
    app.addHook('onRequest', async (req) => {
      seen.push({ method: req.method, url: req.originalUrl, authorization: req.headers['proxy-authorization'] as string | undefined })
    })
  })
  return { ...proxy, seen }
}

const UPSTREAM_AUTH = basic('up', 'up-secret')

function get (port: number, url: string, headers: Record<string, string> = {}): Promise<{ status: number, text: string }> {
  const lines = [`GET ${url} HTTP/1.1`, `Host: ${new URL(url).host}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), 'Connection: close']
  return rawExchange(port, `${lines.join('\r\n')}\r\n\r\n`)
}

test('Upstream 1: an opaque CONNECT goes through the upstream with the upstream\'s own credentials; bytes flow both ways', async (t) => {
  const destination = await startTcpDestination(t)
  const upstream = await startUpstream(t)
  const front = await startProxy(t, { auth: { users: { client: 'client-pw' } }, upstreamProxies: [{ hosts: ['*'], url: `http://up:up-secret@127.0.0.1:${upstream.port}` }] })
  const tunnel = await openTunnel(front.port, `127.0.0.1:${destination.port}`, { 'Proxy-Authorization': basic('client', 'client-pw') })
  t.teardown(() => { tunnel.socket.destroy() })
  t.equal(tunnel.status, 200)
  await echoesThrough(tunnel.socket, await destination.nextConnection(), 'through two proxies')
  t.same(upstream.seen, [{ method: 'CONNECT', url: `127.0.0.1:${destination.port}`, authorization: UPSTREAM_AUTH }], 'the upstream got a CONNECT with its own credentials, not the client\'s')
})

test('Upstream 1: the client gets its 200 only after the upstream\'s, and bytes the upstream sent with its 200 are not lost', async (t) => {
  // A bare upstream that holds its answer until the test releases it.
  let release: (() => void) | undefined
  const gotConnect = deferred<string>()
  const sockets: Socket[] = []
  const server = createServer((socket: Socket) => {
    sockets.push(socket)
    socket.once('data', (head: Buffer) => {
      release = () => socket.write('HTTP/1.1 200 Connection established\r\n\r\nEARLY-BYTES')
      gotConnect.resolve(head.toString('latin1'))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { for (const socket of sockets) socket.destroy(); server.close(() => resolve()) }))
  const upstreamPort = (server.address() as AddressInfo).port
  const front = await startProxy(t, { upstreamProxies: [{ hosts: ['*'], url: `http://127.0.0.1:${upstreamPort}` }] })
  let answered = false
  const opened = openTunnel(front.port, 'destination.example:443').then((tunnel) => { answered = true; return tunnel })
  const head = await gotConnect.promise
  t.match(head, /^CONNECT destination\.example:443 HTTP\/1\.1\r\nHost: destination\.example:443\r\n\r\n$/, 'a name is passed on unresolved')
  t.equal(answered, false, 'no 200 for the client while the upstream has not answered')
  release?.()
  const tunnel = await opened
  t.teardown(() => { tunnel.socket.destroy() })
  t.equal(tunnel.status, 200)
  const early = tunnel.rest.length > 0 ? tunnel.rest.toString() : await new Promise<string>((resolve) => tunnel.socket.once('data', (chunk: Buffer) => resolve(chunk.toString())))
  t.equal(early, 'EARLY-BYTES')
})

test('Upstream 1: a large download through the upstream arrives whole and in order, its end passed on', async (t) => {
  const destination = await startTcpDestination(t)
  const upstream = await startUpstream(t)
  const front = await startProxy(t, { upstreamProxies: [{ hosts: ['*'], url: `http://up:up-secret@127.0.0.1:${upstream.port}` }] })
  const tunnel = await openTunnel(front.port, `127.0.0.1:${destination.port}`)
  t.teardown(() => { tunnel.socket.destroy() })
  t.equal(tunnel.status, 200)
  // 24 MiB in chunks of varied sizes, each byte a function of its offset.
  const total = 24 * 1024 * 1024
  const body = Buffer.alloc(total)
  for (let i = 0; i < total; i++) body[i] = (i * 31 + (i >>> 13)) & 0xff
  const received: Buffer[] = [tunnel.rest]
  const ended = new Promise<void>((resolve) => tunnel.socket.once('end', () => resolve()))
  tunnel.socket.on('data', (chunk: Buffer) => received.push(chunk))
  const origin = await destination.nextConnection()
  for (let offset = 0, size = 1000; offset < total; offset += size, size = (size * 7) % 300_000 + 1) {
    origin.write(body.subarray(offset, Math.min(total, offset + size)))
  }
  origin.end()
  await ended
  const all = Buffer.concat(received)
  t.equal(all.length, total)
  t.ok(all.equals(body), 'every byte in order')
})

test('Upstream 2: http:// goes to the upstream in absolute form with its credentials, never the client\'s; Via and hop-by-hop hold on both hops', async (t) => {
  const origin = await startOrigin(t)
  const upstream = await startUpstream(t)
  const front = await startProxy(t, { auth: { users: { client: 'client-pw' } }, upstreamProxies: [{ hosts: ['*'], url: `http://up:up-secret@127.0.0.1:${upstream.port}` }] })
  const answer = await get(front.port, `http://127.0.0.1:${origin.port}/page?x=1`, { 'Proxy-Authorization': basic('client', 'client-pw'), Connection: 'close, x-hop', 'X-Hop': 'dropped', 'X-Kept': 'kept' })
  t.equal(answer.status, 200)
  t.same(upstream.seen, [{ method: 'GET', url: `http://127.0.0.1:${origin.port}/page?x=1`, authorization: UPSTREAM_AUTH }])
  const seen = origin.requests[0]
  t.equal(seen?.headers['proxy-authorization'], undefined)
  t.equal(seen?.headers['x-hop'], undefined)
  t.equal(seen?.headers['x-kept'], 'kept')
  t.equal(seen?.headers.via, '1.1 fastify-forward-proxy, 1.1 upstream')
  t.match(answer.text, /\r\nvia: 1\.1 upstream\r\nvia: 1\.1 fastify-forward-proxy\r\n/i, 'each hop adds its Via to the response')
})

test('Upstream 3: intercepted requests reach their destination over validated TLS inside a CONNECT through the upstream, with the connection reused', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki, (_req, res) => { res.end('ok') })
  const upstream = await startUpstream(t)
  const front = await startInterceptingProxy(t, pki, {
    proxy: { upstreamProxies: [{ hosts: ['127.0.0.1'], url: `http://up:up-secret@127.0.0.1:${upstream.port}` }] },
    interception: interceptAll(pki)
  })
  const agent = new ProxyAgent({ uri: front.url, requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())
  for (const path of ['/1', '/2', '/3']) {
    const response = await request(`https://127.0.0.1:${origin.port}${path}`, { dispatcher: agent })
    t.equal(await response.body.text(), 'ok')
  }
  t.same(upstream.seen, [{ method: 'CONNECT', url: `127.0.0.1:${origin.port}`, authorization: UPSTREAM_AUTH }], 'one CONNECT through the upstream, reused for three requests')
  t.same(origin.requests.map((seen) => seen.url), ['/1', '/2', '/3'])
})

test('Upstream 4: an upstream that refuses the connection, answers 407 or 5xx, or stays silent gives 502/504 with the RFC 9209 type and next-hop naming it, never its credentials', async (t) => {
  const upstream = await startUpstream(t)
  const silent = await startSentinel(t)
  const refusing = await closedPort()
  const log = capturedLog()
  const hop = (port: number): string => `; next-hop="127\\.0\\.0\\.1:${port}"`
  // [case, upstream URL, status, Proxy-Status of the CONNECT, of the http:// request]
  const cases: Array<[string, string, number, RegExp, RegExp]> = [
    ['refused', `http://up:up-secret@127.0.0.1:${refusing}`, 502, new RegExp(`error=connection_refused${hop(refusing)}`), new RegExp(`error=connection_refused${hop(refusing)}`)],
    ['wrong credentials', `http://up:wrong-secret@127.0.0.1:${upstream.port}`, 502, new RegExp(`error=destination_unavailable; details="upstream proxy answered 407"${hop(upstream.port)}`), new RegExp(`error=destination_unavailable; details="upstream proxy answered 407"${hop(upstream.port)}`)],
    // A silent upstream: the CONNECT's answer is part of connecting; an http:// request waits for its response head.
    ['silent', `http://up:up-secret@127.0.0.1:${silent.port}`, 504, new RegExp(`error=connection_timeout${hop(silent.port)}`), new RegExp(`error=http_response_timeout${hop(silent.port)}`)]
  ]
  for (const [name, url, status, connectStatus, forwardStatus] of cases) {
    const front = await startProxy(t, { limits: { connectTimeout: 500, httpActivityTimeout: 500 }, upstreamProxies: [{ hosts: ['*'], url }] }, undefined, { logger: log.logger })
    const tunnel = await openTunnel(front.port, 'destination.example:443')
    t.teardown(() => { tunnel.socket.destroy() })
    t.equal(tunnel.status, status, `${name}: CONNECT`)
    t.match(tunnel.head, connectStatus, `${name}: CONNECT Proxy-Status`)
    const forwarded = await get(front.port, 'http://destination.example/')
    t.equal(forwarded.status, status, `${name}: http://`)
    t.match(forwarded.text, forwardStatus, `${name}: http:// Proxy-Status`)
    t.notOk(tunnel.head.includes('secret') || forwarded.text.includes('secret'), `${name}: no credentials in the answers`)
  }
  const upstream5xx = await startProxy(t, { via: 'upstream-5xx', destinations: { allowedHosts: ['none.example'] } })
  const front = await startProxy(t, { upstreamProxies: [{ hosts: ['*'], url: `http://127.0.0.1:${upstream5xx.port}` }] })
  const refusedByUpstream = await openTunnel(front.port, 'destination.example:443')
  t.teardown(() => { refusedByUpstream.socket.destroy() })
  t.equal(refusedByUpstream.status, 502)
  t.match(refusedByUpstream.head, /error=destination_unavailable; details="upstream proxy answered 403"; next-hop=/)
  t.notOk(log.lines().join('\n').includes('up-secret') || log.lines().join('\n').includes('wrong-secret'), 'no credentials in any log line')
})

test('Upstream 5: host and port rules apply before the upstream is asked; IP-literal destinations are still checked against the address policy; names are left to the upstream', async (t) => {
  const upstream = await startUpstream(t)
  const resolved: string[] = []
  const front = await startProxy(t, {
    destinations: { deniedHosts: ['denied.example'], allowedPorts: [443] },
    resolver: async (host) => { resolved.push(host); throw Object.assign(new Error('no DNS here'), { code: 'ENOTFOUND' }) },
    upstreamProxies: [{ hosts: ['*'], url: `http://up:up-secret@127.0.0.1:${upstream.port}` }]
  })
  for (const [target, status, type] of [['denied.example:443', 403, 'http_request_denied'], ['allowed.example:22', 403, 'http_request_denied'], ['10.1.2.3:443', 403, 'destination_ip_prohibited']] as const) {
    const tunnel = await openTunnel(front.port, target)
    t.teardown(() => { tunnel.socket.destroy() })
    t.equal(tunnel.status, status, target)
    t.match(tunnel.head, new RegExp(`error=${type}`), target)
  }
  t.same(upstream.seen, [], 'the upstream was never asked for a refused destination')
  const named = await openTunnel(front.port, 'allowed.example:443')
  t.teardown(() => { named.socket.destroy() })
  t.equal(named.status, 502, 'the upstream (ours, with its own policy) could not resolve it either')
  t.same(resolved, [], 'the front proxy resolved nothing: names go to the upstream as they are')
  t.same(upstream.seen.map((seen) => seen.url), ['allowed.example:443'])
})

test('Upstream rules: first match wins, "direct" skips the upstream; a function chooses per destination and request', async (t) => {
  const origin = await startOrigin(t)
  const upstream = await startUpstream(t)
  const url = `http://up:up-secret@127.0.0.1:${upstream.port}`
  const ruled = await startProxy(t, { upstreamProxies: [{ hosts: ['localhost'], url: 'direct' }, { hosts: ['*'], url }] })
  t.equal((await get(ruled.port, `http://localhost:${origin.port}/direct`)).status, 200)
  t.equal((await get(ruled.port, `http://127.0.0.1:${origin.port}/via`)).status, 200)
  t.same(upstream.seen.map((seen) => seen.url), [`http://127.0.0.1:${origin.port}/via`])
  const chosen: string[] = []
  const byFunction = await startProxy(t, {
    upstreamProxies: (destination, req) => {
      chosen.push(`${destination.host} ${req?.headers['x-route'] as string}`)
      return req?.headers['x-route'] === 'upstream' ? url : null
    }
  })
  t.equal((await get(byFunction.port, `http://127.0.0.1:${origin.port}/f1`, { 'X-Route': 'upstream' })).status, 200)
  t.equal((await get(byFunction.port, `http://127.0.0.1:${origin.port}/f2`, { 'X-Route': 'direct' })).status, 200)
  t.same(chosen, ['127.0.0.1 upstream', '127.0.0.1 direct'])
  t.same(upstream.seen.map((seen) => seen.url).slice(1), [`http://127.0.0.1:${origin.port}/f1`])
})

test('Upstream "environment": https_proxy for tunnels, http_proxy (lower case only) for http://, all_proxy as fallback, NO_PROXY as curl reads it', async (t) => {
  const routes = (env: NodeJS.ProcessEnv) => compileUpstreamProxies('environment', env)
  const route = async (env: NodeJS.ProcessEnv, host: string, kind: 'http' | 'tunnel'): Promise<string | null> => (await routes(env)?.routeFor({ host, port: 443 }, null, kind))?.label ?? null
  const env = { HTTPS_PROXY: 'http://tunnel.corp:3128', http_proxy: 'http://u:p@web.corp:8080', NO_PROXY: 'internal.example, .local.example,10.0.0.0/8,192.168.1.5' }
  t.equal(await route(env, 'example.com', 'tunnel'), 'tunnel.corp:3128')
  t.equal(await route(env, 'example.com', 'http'), 'web.corp:8080')
  for (const host of ['internal.example', 'a.internal.example', 'b.local.example', '10.9.8.7', '192.168.1.5']) t.equal(await route(env, host, 'tunnel'), null, `${host} bypasses`)
  t.equal(await route(env, 'notinternal.example', 'tunnel'), 'tunnel.corp:3128', 'a suffix matches at a dot only')
  t.equal(await route({ HTTP_PROXY: 'http://ignored:1' }, 'example.com', 'http'), null, 'HTTP_PROXY in upper case is ignored, as curl does')
  t.equal(await route({ ALL_PROXY: 'http://all.corp:1' }, 'example.com', 'http'), 'all.corp:1')
  t.equal(await route({ HTTPS_PROXY: 'http://x:1', NO_PROXY: '*' }, 'example.com', 'tunnel'), null)
  t.throws(() => routes({ HTTPS_PROXY: 'socks5://x:1' }), { name: 'ForwardProxyOptionsError' })
  const upstream = await startUpstream(t)
  const destination = await startTcpDestination(t)
  const saved = process.env.https_proxy
  process.env.https_proxy = `http://up:up-secret@127.0.0.1:${upstream.port}`
  t.teardown(() => { if (saved === undefined) delete process.env.https_proxy; else process.env.https_proxy = saved })
  const front = await startProxy(t, { upstreamProxies: 'environment' })
  const tunnel = await openTunnel(front.port, `127.0.0.1:${destination.port}`)
  t.teardown(() => { tunnel.socket.destroy() })
  t.equal(tunnel.status, 200)
  t.same(upstream.seen.map((seen) => seen.method), ['CONNECT'], 'the registration read the environment')
})

test('Upstream options: bad rules are refused at registration naming the entry, never quoting credentials', async (t) => {
  const cases: Array<[unknown, string]> = [
    [{ hosts: ['*'] }, 'upstreamProxies'],
    [[{ hosts: [], url: 'direct' }], 'upstreamProxies[0].hosts'],
    [[{ hosts: ['*'], url: 'socks5://u:sekrit@x:1' }], 'upstreamProxies[0].url'],
    [[{ hosts: ['*'], url: 'http://u:sekrit@x:1/path' }], 'upstreamProxies[0].url'],
    [[{ hosts: ['*'], url: 'direct', via: 'x' }], 'upstreamProxies[0].via'],
    [[{ hosts: ['*'], url: 'http://u:sek%zzrit@x:1' }], 'upstreamProxies[0].url'],
    [[{ hosts: ['*'], url: 'https://x:1', ca: '-----BEGIN PRIVATE KEY-----\nsekrit\n-----END PRIVATE KEY-----\n' }], 'upstreamProxies[0].ca'],
    [[{ hosts: ['*'], url: 'https://x:1', ca: 'not a certificate' }], 'upstreamProxies[0].ca']
  ]
  for (const [option, name] of cases) {
    const error = await startProxy(t, { upstreamProxies: option as never })
      .then(() => undefined, (caught: unknown) => caught as { option?: string, message: string })
    t.equal(error?.option, name)
    t.notOk(error?.message.includes('sekrit'))
  }
})

test('Upstream: an upstream that is this proxy itself is a loop: 508, no chain of CONNECTs or requests, whether it is named by its address or by a host name', async (t) => {
  for (const host of ['127.0.0.1', 'localhost']) {
    let proxyRequests = 0
    const front = await startProxy(t, {}, (app: FastifyInstance) => {
      app.addHook('onRequest', async (req) => { if (req.method === 'CONNECT' || req.url.startsWith('http://')) proxyRequests++ })
    })
    front.app.forwardProxy.reconfigure({ upstreamProxies: [{ hosts: ['*'], url: `http://${host}:${front.port}` }] })
    const tunnel = await openTunnel(front.port, 'destination.example:443')
    t.teardown(() => { tunnel.socket.destroy() })
    t.equal(tunnel.status, 508, `${host}: CONNECT`)
    t.match(tunnel.head, /error=proxy_loop_detected; details="the upstream proxy is this proxy"/)
    const forwarded = await get(front.port, 'http://destination.example/')
    t.equal(forwarded.status, 508, `${host}: http://`)
    t.match(forwarded.text, /error=proxy_loop_detected; details="the upstream proxy is this proxy"/)
    t.equal(proxyRequests, 2, `${host}: the proxy never sent itself a request`)
  }
})

/** An upstream that answers every CONNECT with `answer` and then, unless it is `null`, relays nothing. */
async function startScriptedUpstream (t: Test, answer: (socket: Socket) => void): Promise<number> {
  const server = createServer((socket) => {
    socket.on('error', () => {})
    socket.once('data', () => answer(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return (server.address() as AddressInfo).port
}

test('Upstream: one that ends the connection without a whole answer to CONNECT gets 502 connection_terminated at once, not a wait for connectTimeout; one that sends 100 Continue before its 200 opens the tunnel', async (t) => {
  const closing = await startScriptedUpstream(t, (socket) => socket.end('HTTP/1.1 200 Conn'))
  const interim = await startScriptedUpstream(t, (socket) => {
    socket.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 Connection Established\r\n\r\n')
    socket.on('data', (chunk: Buffer) => socket.write(chunk))
  })
  // connectTimeout far longer than the test's own timeout: an answer means it was not waited for.
  const front = await startProxy(t, {
    limits: { connectTimeout: 60_000 },
    upstreamProxies: [{ hosts: ['closing.example'], url: `http://127.0.0.1:${closing}` }, { hosts: ['*'], url: `http://127.0.0.1:${interim}` }]
  })
  const cut = await openTunnel(front.port, 'closing.example:443')
  t.teardown(() => { cut.socket.destroy() })
  t.equal(cut.status, 502)
  t.match(cut.head, /error=connection_terminated; next-hop=/)
  const tunnel = await openTunnel(front.port, 'other.example:443')
  t.teardown(() => { tunnel.socket.destroy() })
  t.equal(tunnel.status, 200, 'the interim answer is skipped')
  tunnel.socket.write('ping')
  const [echoed] = await once(tunnel.socket, 'data') as [Buffer]
  t.equal(echoed.toString(), 'ping')
})

/** Our proxy as an `https://` upstream on [::1] (HTTP/1.1 over TLS) with the certificate `leaf`; user `up`/`up-secret`. */
async function startTlsUpstreamOnIpv6 (t: Test, leaf: { cert: string, key: string }): Promise<number> {
  const app = Fastify({ logger: false, https: { cert: leaf.cert, key: leaf.key } }) as unknown as FastifyInstance
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY, via: 'upstream', auth: { users: { up: 'up-secret' } } })
  await app.listen({ port: 0, host: '::1' })
  t.teardown(() => app.close())
  return (app.server.address() as AddressInfo).port
}

test('Upstream over TLS named by an IPv6 literal (https://[::1]:port): verified against the IP address entries of its certificate; one for another address gets 502 tls_certificate_error naming the upstream', async (t) => {
  const dir = certificateDirectory(t)
  const ca = await makeCa(dir, 'ca')
  const destination = await startTcpDestination(t)
  const target = `127.0.0.1:${destination.port}`
  const client = { 'Proxy-Authorization': basic('client', 'client-pw') }

  const right = await startTlsUpstreamOnIpv6(t, await issueLeaf(dir, 'right', ca, { san: 'IP:::1' }))
  const front = await startProxy(t, { auth: { users: { client: 'client-pw' } }, upstreamProxies: [{ hosts: ['*'], url: `https://up:up-secret@[::1]:${right}`, ca: ca.cert }] })
  const tunnel = await openTunnel(front.port, target, client)
  t.teardown(() => { tunnel.socket.destroy() })
  if (!t.equal(tunnel.status, 200, tunnel.head)) return
  await echoesThrough(tunnel.socket, await destination.nextConnection(), 'through the TLS upstream')

  const wrong = await startTlsUpstreamOnIpv6(t, await issueLeaf(dir, 'wrong', ca, { san: 'IP:::2,IP:127.0.0.1,DNS:localhost' }))
  const refusing = await startProxy(t, { auth: { users: { client: 'client-pw' } }, upstreamProxies: [{ hosts: ['*'], url: `https://up:up-secret@[::1]:${wrong}`, ca: ca.cert }] })
  const refused = await openTunnel(refusing.port, target, client)
  refused.socket.destroy()
  t.equal(refused.status, 502, refused.head)
  t.match(refused.head, `\r\nproxy-status: fastify-forward-proxy; error=tls_certificate_error; details="ERR_TLS_CERT_ALTNAME_INVALID"; next-hop="[::1]:${wrong}"\r\n`)
  t.notMatch(refused.head, /up-secret/)
})

/** One port that hands TLS connections to `tlsPort` and everything else to `plainPort`, as a proxy serving both on one port would. */
async function startSniffingPort (t: Test, tlsPort: number, plainPort: number): Promise<number> {
  const sockets: Socket[] = []
  const server = createServer((socket: Socket) => {
    sockets.push(socket)
    socket.once('data', (first: Buffer) => {
      const inner = connect(first[0] === 0x16 ? tlsPort : plainPort, '127.0.0.1')
      sockets.push(inner)
      inner.write(first)
      socket.pipe(inner).pipe(socket)
      inner.on('error', () => socket.destroy())
      socket.on('error', () => inner.destroy())
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { for (const socket of sockets) socket.destroy(); server.close(() => resolve()) }))
  return (server.address() as AddressInfo).port
}

test('Upstream rules naming one host:port over http:// and https://: http:// requests reach each rule\'s upstream over its own protocol; two rules giving one https upstream different ca are refused', async (t) => {
  const dir = certificateDirectory(t)
  const ca = await makeCa(dir, 'ca')
  const leaf = await issueLeaf(dir, 'upstream', ca, { san: 'DNS:localhost' })
  const origin = await startOrigin(t)
  const overTls = Fastify({ logger: false, https: { cert: leaf.cert, key: leaf.key } }) as unknown as FastifyInstance
  await overTls.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY, via: 'upstream-tls' })
  await overTls.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => overTls.close())
  const plain = await startProxy(t, { via: 'upstream-plain' })
  const shared = await startSniffingPort(t, (overTls.server.address() as AddressInfo).port, plain.port)

  const front = await startProxy(t, {
    upstreamProxies: [
      { hosts: ['127.0.0.1'], url: `https://localhost:${shared}`, ca: ca.cert },
      { hosts: ['localhost'], url: `http://localhost:${shared}` }
    ]
  })
  const viaTls = await get(front.port, `http://127.0.0.1:${origin.port}/a`)
  t.equal(viaTls.status, 200, viaTls.text)
  t.match(viaTls.text, /\r\nvia: 1\.1 upstream-tls\r\n/i, 'the https rule\'s requests went over TLS')
  const viaPlain = await get(front.port, `http://localhost:${origin.port}/b`)
  t.equal(viaPlain.status, 200, viaPlain.text)
  t.match(viaPlain.text, /\r\nvia: 1\.1 upstream-plain\r\n/i, 'the http rule\'s requests went in the clear')

  const conflicting = await startProxy(t, {
    upstreamProxies: [
      { hosts: ['127.0.0.1'], url: `https://localhost:${shared}`, ca: ca.cert },
      { hosts: ['localhost'], url: `https://LOCALHOST:${shared}` }
    ]
  }).then(() => undefined, (caught: unknown) => caught as { option?: string, message: string })
  t.equal(conflicting?.option, 'upstreamProxies[1].ca')
  t.match(conflicting?.message, `upstreamProxies[0]'s for the same upstream https://localhost:${shared}`)
})

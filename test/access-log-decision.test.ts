import { test, type Test } from 'tap'
import { ProxyAgent, request } from 'undici'
import { resolveToLoopback, startOrigin, startProxy } from './helpers/servers'
import { basic, openTunnel, rawExchange } from './helpers/raw-client'
import { once, readAll, startTcpDestination } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'
import { capturedLog, type CapturedLog } from './helpers/captured-log'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'

// The tests' destinations go by names that resolve to loopback (resolveToLoopback): the access
// line's `destination` keeps the name, its `address` says where the proxy actually connected.

function get (port: number, target: string, headers: Record<string, string> = {}): Promise<{ status: number, text: string }> {
  const lines = [`GET ${target} HTTP/1.1`, `Host: ${new URL(target).host}`, ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`), 'Connection: close']
  return rawExchange(port, `${lines.join('\r\n')}\r\n\r\n`)
}

async function accessLines (log: CapturedLog, count: number): Promise<Array<Record<string, unknown>>> {
  await eventually(() => log.access().length >= count)
  return log.access()
}

function withoutExplanation (t: Test, entry: Record<string, unknown> | undefined, what: string): void {
  t.notOk(entry !== undefined && ('reason' in entry || 'rule' in entry), `${what}: a plain allow carries no reason and no rule`)
}

test('Access log decision: an allowed http:// request is "allow" with the address dialed for its name and intercepted false; the next request, on the reused pooled connection, names that connection\'s address', async (t) => {
  const log = capturedLog()
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { resolver: resolveToLoopback }, undefined, { logger: log.logger })
  const agent = new ProxyAgent({ uri: proxy.url, proxyTunnel: false })
  t.teardown(() => agent.close())
  for (const path of ['/first', '/second']) {
    const response = await request(`http://origin.test:${origin.port}${path}`, { dispatcher: agent })
    await response.body.text()
    t.equal(response.statusCode, 200)
  }
  t.equal(origin.accepts.accepted, 1, 'the second request reused the proxy\'s pooled connection')
  const [first, second] = await accessLines(log, 2)
  for (const entry of [first, second]) {
    t.match(entry, { kind: 'forward', destination: `origin.test:${origin.port}`, address: `127.0.0.1:${origin.port}`, intercepted: false, decision: 'allow', status: 200, errorType: null })
    withoutExplanation(t, entry, 'forward')
  }
})

test('Access log decision: an allowed CONNECT (opaque tunnel) logs "allow", the address dialed and intercepted false when it closes', async (t) => {
  const log = capturedLog()
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t, { resolver: resolveToLoopback }, undefined, { logger: log.logger })
  const tunnel = await openTunnel(proxy.port, `tunnel.test:${destination.port}`)
  t.equal(tunnel.status, 200)
  const upstream = await destination.nextConnection()
  upstream.end('bye')
  t.equal(await readAll(tunnel.socket), 'bye')
  tunnel.socket.end()
  await once(tunnel.socket, 'close')
  const [line] = await accessLines(log, 1)
  t.match(line, { kind: 'tunnel', tunnel: 'opaque', destination: `tunnel.test:${destination.port}`, address: `127.0.0.1:${destination.port}`, intercepted: false, decision: 'allow', status: 200 })
  withoutExplanation(t, line, 'tunnel')
})

test('Access log decision: a request inside an intercepted tunnel logs intercepted true and the address its own connection was dialed to; the tunnel\'s line says intercepted true and names no address (it dialed nothing)', async (t) => {
  const log = capturedLog()
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { resolver: resolveToLoopback },
    interception: interceptAll(pki),
    server: { logger: log.logger }
  })
  const agent = new ProxyAgent({ uri: proxy.url, requestTls: { ca: pki.operatorCa.cert } })
  const response = await request(`https://localhost:${origin.port}/inside`, { dispatcher: agent })
  await response.body.text()
  await agent.close()
  const entries = await accessLines(log, 2)
  const inside = entries.find((entry) => entry.kind === 'intercepted')
  t.match(inside, { destination: `localhost:${origin.port}`, address: `127.0.0.1:${origin.port}`, intercepted: true, decision: 'allow', status: 200 })
  withoutExplanation(t, inside, 'intercepted request')
  const tunnel = entries.find((entry) => entry.kind === 'tunnel')
  t.match(tunnel, { tunnel: 'intercepted', intercepted: true, decision: 'allow', status: 200 })
  t.notOk(tunnel !== undefined && 'address' in tunnel, 'the intercepted tunnel dialed nothing itself')
})

test('Access log decision: refusals are "deny" with the Proxy-Status details as reason and the rule that refused: deniedHosts, a user\'s allowedHosts, its requestsPerMinute (429), missing credentials (407); none names an address', async (t) => {
  const log = capturedLog()
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, {
    destinations: { allowPrivateNetworks: true, allowedPorts: '*', deniedHosts: ['denied.test'] },
    resolver: resolveToLoopback,
    auth: { users: { alice: 'pw-a', agent: { password: 'pw-g', allowedHosts: ['origin.test'], requestsPerMinute: 1 } } }
  }, undefined, { logger: log.logger })
  const alice = { 'Proxy-Authorization': basic('alice', 'pw-a') }
  const agent = { 'Proxy-Authorization': basic('agent', 'pw-g') }

  const denied = await openTunnel(proxy.port, 'denied.test:443', alice)
  t.equal(denied.status, 403)
  denied.socket.destroy()
  t.equal((await get(proxy.port, `http://elsewhere.test:${origin.port}/`, agent)).status, 403)
  t.equal((await get(proxy.port, `http://origin.test:${origin.port}/1`, agent)).status, 200)
  t.equal((await get(proxy.port, `http://origin.test:${origin.port}/2`, agent)).status, 429)
  t.equal((await get(proxy.port, `http://origin.test:${origin.port}/3`)).status, 407)

  const entries = await accessLines(log, 5)
  t.match(entries[0], { kind: 'connect', destination: 'denied.test:443', status: 403, intercepted: false, decision: 'deny', reason: 'host not allowed', rule: 'destinations.deniedHosts' })
  t.match(entries[1], { kind: 'forward', user: 'agent', status: 403, decision: 'deny', reason: 'host not allowed for this user', rule: 'users.agent.allowedHosts' })
  t.match(entries[2], { kind: 'forward', user: 'agent', status: 200, decision: 'allow', address: `127.0.0.1:${origin.port}` })
  t.match(entries[3], { kind: 'forward', user: 'agent', status: 429, decision: 'deny', reason: 'request rate limit of this user reached', rule: 'users.agent.requestsPerMinute' })
  t.match(entries[4], { kind: 'forward', user: null, status: 407, errorType: 'http_request_denied', decision: 'deny', rule: 'auth' })
  t.type(entries[4]?.reason, 'string', 'a 407 without details is explained by its message')
  for (const entry of [entries[0], entries[1], entries[3], entries[4]]) {
    t.notOk(entry !== undefined && 'address' in entry, `nothing was dialed for the ${String(entry?.status)}`)
  }
})

test('Access log decision: a placeholder sent where its secret is not granted is "deny" with reason "secret not allowed for this destination", rule secrets.<name>.hosts and the secret named, inside an intercepted tunnel', async (t) => {
  const log = capturedLog()
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { secrets: [{ name: 'api', value: 'sk-live-5b2d4c6f8a0b9e7d', hosts: [`127.0.0.1:${origin.port}`], placeholder: 'PLACEHOLDER_API_KEY' }] },
    interception: interceptAll(pki),
    server: { logger: log.logger }
  })
  const agent = new ProxyAgent({ uri: proxy.url, requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())
  const response = await request(`https://localhost:${origin.port}/steal`, { dispatcher: agent, headers: { authorization: 'Bearer PLACEHOLDER_API_KEY' } })
  await response.body.text()
  t.equal(response.statusCode, 403)
  t.equal(origin.requests.length, 0)
  await eventually(() => log.access().some((entry) => entry.kind === 'intercepted'))
  t.match(log.access().find((entry) => entry.kind === 'intercepted'), {
    destination: `localhost:${origin.port}`, status: 403, intercepted: true, decision: 'deny', reason: 'secret not allowed for this destination', rule: 'secrets.api.hosts', secrets: ['api']
  })
})

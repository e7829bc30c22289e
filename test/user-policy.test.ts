import { test, type Test } from 'tap'
import { startOrigin, startProxy } from './helpers/servers'
import { startCountingDestination } from './helpers/counting-destination'
import { basic, openTunnel, rawExchange, retryAfterOf, type OpenTunnel } from './helpers/raw-client'
import { eventually } from './helpers/eventually'
import Fastify from 'fastify'
import { forwardProxy, ProxyError, type ForwardProxyOptions } from '../lib/index'
import { UserPolicy } from './helpers/internals'
import { closedPort } from './helpers/closed-port'
import { startTcpDestination } from './helpers/tcp-destination'
import { connectHttp2, openHttp2Tunnel, startHttp2Proxy } from './helpers/http2-proxy'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const ALICE = { 'Proxy-Authorization': basic('alice', 'pw-a') }
const AGENT = { 'Proxy-Authorization': basic('agent-7', 'pw7') }

function usersOption (agent: Record<string, unknown>): ForwardProxyOptions {
  return { auth: { users: { alice: 'pw-a', 'agent-7': { password: 'pw7', ...agent } } } }
}

async function tunnel (t: Test, port: number, target: string, headers: Record<string, string>): Promise<OpenTunnel> {
  const opened = await openTunnel(port, target, headers)
  t.teardown(() => { opened.socket.destroy() })
  return opened
}

function httpGet (proxyPort: number, target: string, headers: Record<string, string>): Promise<{ status: number, text: string }> {
  const lines = [`GET ${target} HTTP/1.1`, `Host: ${new URL(target).host}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), 'Connection: close']
  return rawExchange(proxyPort, `${lines.join('\r\n')}\r\n\r\n`)
}

test('Per-user policy: allowedHosts narrows the destination policy for that user only: other hosts get 403 http_request_denied with nothing dialed (CONNECT and http://)', async (t) => {
  const destination = await startCountingDestination(t)
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, usersOption({ allowedHosts: ['127.0.0.1'] }))
  const refused = await tunnel(t, proxy.port, `localhost:${destination.port}`, AGENT)
  t.equal(refused.status, 403)
  t.match(refused.head, /proxy-status: fastify-forward-proxy; error=http_request_denied; details="host not allowed for this user"/i)
  const refusedHttp = await httpGet(proxy.port, `http://localhost:${origin.port}/x`, AGENT)
  t.equal(refusedHttp.status, 403)
  t.match(refusedHttp.text, /details="host not allowed for this user"/)
  await expectNothingDialedBefore(t, destination.accepts, 'nothing was dialed for the refused CONNECT')
  await expectNothingDialedBefore(t, origin.accepts, 'nothing was sent for the refused http:// request')

  t.equal((await tunnel(t, proxy.port, `127.0.0.1:${destination.port}`, AGENT)).status, 200, 'an allowed host works')
  t.equal((await tunnel(t, proxy.port, `localhost:${destination.port}`, ALICE)).status, 200, 'a string user keeps the global policy')
  t.equal((await httpGet(proxy.port, `http://localhost:${origin.port}/y`, ALICE)).status, 200)
})

test('Per-user policy: maxConcurrentTunnels: beyond it 429 connection_limit_reached with nothing dialed, while other users go on; a closed tunnel frees its slot', async (t) => {
  const destination = await startCountingDestination(t)
  const proxy = await startProxy(t, usersOption({ maxConcurrentTunnels: 2 }))
  const target = `127.0.0.1:${destination.port}`
  const first = await tunnel(t, proxy.port, target, AGENT)
  const second = await tunnel(t, proxy.port, target, AGENT)
  t.same([first.status, second.status], [200, 200])
  const third = await tunnel(t, proxy.port, target, AGENT)
  t.equal(third.status, 429)
  t.match(third.head, /proxy-status: fastify-forward-proxy; error=connection_limit_reached; details="tunnel limit of this user reached"/i)
  await expectNothingDialedBefore(t, destination.accepts, 'the refused CONNECT dialed nothing', { after: 2 })
  const others = await Promise.all([1, 2, 3].map(async () => (await tunnel(t, proxy.port, target, ALICE)).status))
  t.same(others, [200, 200, 200], 'another user is not limited by it')

  first.socket.destroy()
  await eventually(async () => {
    const retry = await openTunnel(proxy.port, target, AGENT)
    t.teardown(() => { retry.socket.destroy() })
    return retry.status === 200
  })
  t.pass('a slot came back once a tunnel closed')
})

test('Per-user policy: requestsPerMinute: beyond it 429 http_request_denied with Retry-After; CONNECTs and http:// requests count; other users go on', async (t) => {
  const origin = await startOrigin(t)
  const destination = await startCountingDestination(t)
  const proxy = await startProxy(t, usersOption({ requestsPerMinute: 3 }))
  const statuses = [
    (await httpGet(proxy.port, `http://127.0.0.1:${origin.port}/1`, AGENT)).status,
    (await httpGet(proxy.port, `http://127.0.0.1:${origin.port}/2`, AGENT)).status,
    (await tunnel(t, proxy.port, `127.0.0.1:${destination.port}`, AGENT)).status
  ]
  t.same(statuses, [200, 200, 200])
  const originDialedBefore = origin.accepts.accepted
  const limited = await httpGet(proxy.port, `http://127.0.0.1:${origin.port}/4`, AGENT)
  t.equal(limited.status, 429)
  t.match(limited.text, /proxy-status: fastify-forward-proxy; error=http_request_denied; details="request rate limit of this user reached"/i)
  const retryAfter = retryAfterOf(limited.text)
  t.ok(retryAfter !== null && retryAfter >= 1 && retryAfter <= 60, `Retry-After is the rest of the minute (${retryAfter})`)
  const limitedTunnel = await tunnel(t, proxy.port, `127.0.0.1:${destination.port}`, AGENT)
  t.equal(limitedTunnel.status, 429)
  t.equal(origin.requests.length, 2)
  await expectNothingDialedBefore(t, origin.accepts, 'the refused request was not sent', { after: originDialedBefore })
  await expectNothingDialedBefore(t, destination.accepts, 'the refused CONNECT dialed nothing', { after: 1 })
  t.equal((await httpGet(proxy.port, `http://127.0.0.1:${origin.port}/alice`, ALICE)).status, 200, 'another user goes on')
})

test('Per-user policy from validate: the returned user\'s fields are enforced; fields that are not a usable policy answer 500 without dialing', async (t) => {
  const destination = await startCountingDestination(t)
  const proxy = await startProxy(t, {
    auth: {
      validate: (name) => name === 'narrow' ? { name, allowedHosts: ['localhost'] } : name === 'broken' ? { name, maxConcurrentTunnels: -1 } : false
    }
  })
  const target = `127.0.0.1:${destination.port}`
  t.equal((await tunnel(t, proxy.port, target, { 'Proxy-Authorization': basic('narrow', 'x') })).status, 403)
  t.equal((await tunnel(t, proxy.port, `localhost:${destination.port}`, { 'Proxy-Authorization': basic('narrow', 'x') })).status, 200)
  const broken = await tunnel(t, proxy.port, target, { 'Proxy-Authorization': basic('broken', 'x') })
  t.equal(broken.status, 500)
  t.match(broken.head, /error=proxy_internal_error/)
  await expectNothingDialedBefore(t, destination.accepts, 'only the allowed tunnel was dialed', { after: 1 })
})

test('Per-user policy: bad users entries are refused at registration naming the field', async (t) => {
  const cases: Array<[string, unknown]> = [
    ['auth.users.a', { password: '' }],
    ['auth.users.a.allowedHosts[0]', { password: 'p', allowedHosts: ['exa mple'] }],
    ['auth.users.a.secrets', { password: 'p', secrets: ['undefined-secret'] }],
    ['auth.users.a.maxConcurrentTunnels', { password: 'p', maxConcurrentTunnels: 0 }],
    ['auth.users.a.requestsPerMinute', { password: 'p', requestsPerMinute: 1.5 }],
    ['auth.users.a.pasword', { password: 'p', pasword: 'p' }]
  ]
  for (const [option, entry] of cases) {
    const app = Fastify()
    const error = await app.register(forwardProxy, { auth: { users: { a: entry } } } as ForwardProxyOptions).ready()
      .then(() => undefined, (caught: unknown) => caught)
    await app.close()
    t.equal((error as { option?: string } | undefined)?.option, option)
  }
})

test('Per-user policy: requestsPerMinute counts in one-minute windows: refused with the seconds left as Retry-After until the minute is over, then counted afresh (a clock driven by the test)', async (t) => {
  let now = 1_000_000
  const policy = new UserPolicy(null, () => now)
  const agent = { name: 'agent-7', requestsPerMinute: 2 }
  const destination = { host: 'api.example.test', port: 443 }
  const refusal = (): unknown => { try { policy.admitRequest(agent, destination); return null } catch (error) { return error } }
  t.equal(refusal(), null, 'first request of the minute')
  now += 10_000
  t.equal(refusal(), null, 'second request of the minute')
  now += 20_000
  const third = refusal()
  t.ok(third instanceof ProxyError, 'the third within the minute is refused')
  t.equal((third as ProxyError).status, 429)
  t.equal((third as ProxyError).retryAfter, 30, 'Retry-After: the 30 s left of the minute')
  now += 29_999
  t.ok(refusal() instanceof ProxyError, 'still refused 1 ms before the minute is over')
  now += 1
  t.equal(refusal(), null, 'a new minute: admitted again')
  t.equal(refusal(), null, 'and counted from zero (two per minute)')
  t.ok(refusal() instanceof ProxyError, 'the third of the new minute is refused')
  now += 120_000
  t.equal(refusal(), null, 'after two idle minutes: admitted')
})

test('Per-user policy: a tunnel whose dial fails gives the user\'s slot back: refused connection, unresolvable name, refused address, each twice with maxConcurrentTunnels 1, then a tunnel opens', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t, {
    ...usersOption({ maxConcurrentTunnels: 1 }),
    destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' },
    resolver: async (hostname) => {
      if (hostname === 'nowhere.test') throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' })
      // A private address the policy refuses after resolution: never dialed.
      if (hostname === 'private.test') return [{ address: '10.1.2.3', family: 4 }]
      return [{ address: '127.0.0.1', family: 4 }]
    }
  })
  const failing: Array<[string, number]> = [[`127.0.0.1:${await closedPort()}`, 502], ['nowhere.test:443', 502], ['private.test:443', 403]]
  for (const [target, status] of failing) {
    for (const attempt of [1, 2]) {
      const refused = await tunnel(t, proxy.port, target, AGENT)
      t.equal(refused.status, status, `${target}, attempt ${attempt}: ${refused.head.split('\r\n')[0] ?? ''}`)
      t.notMatch(refused.head, /connection_limit_reached/, 'not the user\'s tunnel limit')
    }
  }
  const opened = await tunnel(t, proxy.port, `127.0.0.1:${destination.port}`, AGENT)
  t.equal(opened.status, 200, 'the one slot is free: a tunnel opens')
})

test('Per-user policy over HTTP/2 CONNECT: allowedHosts refuses another host with 403 before dialing, and maxConcurrentTunnels holds per stream', async (t) => {
  const destination = await startCountingDestination(t)
  const proxy = await startHttp2Proxy(t, usersOption({ allowedHosts: ['localhost'], maxConcurrentTunnels: 1 }))
  const session = await connectHttp2(t, proxy)
  const auth = { 'proxy-authorization': AGENT['Proxy-Authorization'] }

  const refused = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`, auth)
  if (!t.equal(refused.status, 403)) return
  t.match(refused.headers['proxy-status'], /error=http_request_denied; details="host not allowed for this user"/)
  await refused.body()

  const first = await openHttp2Tunnel(session, `localhost:${destination.port}`, auth)
  t.equal(first.status, 200, 'an allowed host opens')
  await eventually(() => destination.accepted >= 1)
  const second = await openHttp2Tunnel(session, `localhost:${destination.port}`, auth)
  if (!t.equal(second.status, 429, 'a second stream is over the user\'s tunnel limit')) return
  t.match(second.headers['proxy-status'], /error=connection_limit_reached; details="tunnel limit of this user reached"/)
  await second.body()
  const alice = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`, { 'proxy-authorization': ALICE['Proxy-Authorization'] })
  t.equal(alice.status, 200, 'another user on the same session is not limited by it')
  await eventually(() => destination.accepted >= 2)
  first.stream.close()
  alice.stream.close()
  await expectNothingDialedBefore(t, destination.accepts, 'the allowed tunnels were dialed; the refused streams, answered before them, were not', { after: 2 })
})

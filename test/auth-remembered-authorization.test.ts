// A Proxy-Authorization header whose credentials passed the users table admits the client's later
// requests at once, without the header being parsed or the credentials checked again; but a
// client locked out is still refused, a reconfiguration forgets what was remembered, a tunnel
// opened that way is still checked again after a reconfiguration, and what an application hook
// does to request.proxyUser stays with that request.
import { test } from 'tap'
import { basic, openTunnel, rawExchange } from './helpers/raw-client'
import { LOOPBACK_TEST_POLICY, startOrigin, startProxy } from './helpers/servers'
import { startTcpDestination } from './helpers/tcp-destination'
import { credentialCheckFromUsers } from './helpers/internals'
import type { ForwardProxyCredentialCheck } from '../lib/index'

const get = (originPort: number, authorization: string): string =>
  `GET http://127.0.0.1:${originPort}/x HTTP/1.1\r\nHost: 127.0.0.1:${originPort}\r\nProxy-Authorization: ${authorization}\r\nConnection: close\r\n\r\n`

/** A users table whose checks are counted; it keeps what the table remembers (its own properties are copied). */
function countedUsersTable (users: Record<string, string>): { check: ForwardProxyCredentialCheck, calls: () => number } {
  const table = credentialCheckFromUsers(users)
  let calls = 0
  const counted: ForwardProxyCredentialCheck = (username, password, request) => {
    calls++
    return table(username, password, request)
  }
  return { check: Object.assign(counted, table), calls: () => calls }
}

test('a Proxy-Authorization that passed is admitted again without its credentials being checked; another spelling of them is checked once', async (t) => {
  const origin = await startOrigin(t)
  const { check, calls } = countedUsersTable({ alice: 'pw-alice' })
  const proxy = await startProxy(t, { auth: { validate: check } })
  const header = basic('alice', 'pw-alice')
  for (let request = 0; request < 3; request++) t.equal((await rawExchange(proxy.port, get(origin.port, header))).status, 200)
  t.equal(calls(), 1, 'checked on the first request only')
  const otherSpelling = header.replace(/^Basic/, 'basic')
  t.equal((await rawExchange(proxy.port, get(origin.port, otherSpelling))).status, 200)
  t.equal((await rawExchange(proxy.port, get(origin.port, otherSpelling))).status, 200)
  t.equal(calls(), 2, 'the other spelling was checked once, then remembered too')
  t.equal((await rawExchange(proxy.port, get(origin.port, basic('alice', 'wrong')))).status, 407)
  t.equal((await rawExchange(proxy.port, get(origin.port, basic('alice', 'wrong')))).status, 407)
  t.equal(calls(), 4, 'wrong credentials are checked every time: only a pass is remembered')
})

test('a client locked out is refused with 429 even with a Proxy-Authorization that passed before', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 'pw-alice' }, failureLimit: { maxFailures: 2, window: 600_000 } } })
  const header = basic('alice', 'pw-alice')
  t.equal((await rawExchange(proxy.port, get(origin.port, header))).status, 200)
  t.equal((await rawExchange(proxy.port, get(origin.port, header))).status, 200, 'remembered')
  for (const guess of ['a', 'b']) t.equal((await rawExchange(proxy.port, get(origin.port, basic('alice', guess)))).status, 407)
  const locked = await rawExchange(proxy.port, get(origin.port, header))
  t.equal(locked.status, 429)
  t.match(locked.text, /\r\nproxy-status: fastify-forward-proxy; error=http_request_denied; details="too many failed authentication attempts"\r\n/i)
})

test('a reconfiguration forgets the Proxy-Authorization values that passed: a changed password is refused at the next request', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 'old-password' } } })
  const old = basic('alice', 'old-password')
  t.equal((await rawExchange(proxy.port, get(origin.port, old))).status, 200)
  t.equal((await rawExchange(proxy.port, get(origin.port, old))).status, 200, 'remembered')
  proxy.app.forwardProxy.reconfigure({ destinations: LOOPBACK_TEST_POLICY, auth: { users: { alice: 'new-password' } } })
  t.equal((await rawExchange(proxy.port, get(origin.port, old))).status, 407)
  t.equal((await rawExchange(proxy.port, get(origin.port, basic('alice', 'new-password')))).status, 200)
})

test('an opaque tunnel opened with a remembered Proxy-Authorization is closed when a reconfiguration removes its user', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 'pw-alice', bob: 'pw-bob' } } })
  const header = { 'Proxy-Authorization': basic('alice', 'pw-alice') }
  const first = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`, header)
  t.equal(first.status, 200)
  const firstUpstream = await destination.nextConnection()
  firstUpstream.resume()
  const second = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`, header)
  t.teardown(() => { first.socket.destroy(); second.socket.destroy() })
  t.equal(second.status, 200, 'admitted by the remembered header')
  const upstream = await destination.nextConnection()
  upstream.resume()
  const closed = new Promise<void>((resolve) => second.socket.once('close', () => resolve()))
  const upstreamEnded = new Promise<void>((resolve) => upstream.once('end', () => resolve()))
  proxy.app.forwardProxy.reconfigure({ destinations: LOOPBACK_TEST_POLICY, auth: { users: { bob: 'pw-bob' } } })
  await Promise.all([closed, upstreamEnded])
  t.pass('the tunnel admitted by the remembered header was closed, its destination connection too')
})

test('a change an application hook makes to request.proxyUser does not reach the next request with the same Proxy-Authorization', async (t) => {
  const origin = await startOrigin(t)
  const seen: unknown[] = []
  const proxy = await startProxy(t, { auth: { users: { alice: { password: 'pw-alice', allowedHosts: ['127.0.0.1'] } } } }, (app) => {
    app.addHook('preHandler', async (request) => {
      const user = request.proxyUser as unknown as Record<string, unknown>
      seen.push(user.visitedBy)
      user.visitedBy = 'an earlier request'
    })
  })
  const header = basic('alice', 'pw-alice')
  for (let request = 0; request < 3; request++) t.equal((await rawExchange(proxy.port, get(origin.port, header))).status, 200)
  t.same(seen, [undefined, undefined, undefined], 'each request starts from the configured user')
})

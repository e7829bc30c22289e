// Revocation is immediate: a reconfiguration that removes a user, changes its password, revokes a
// secret from it or narrows its hosts or the destinations applies to the next request inside
// tunnels already open and to pooled connections; an open opaque tunnel that would no longer be
// admitted is closed. A request in flight finishes under the settings it was checked against.
import { test, type Test } from 'tap'
import type { ClientHttp2Session } from 'node:http2'
import type { ForwardProxyOptions, ForwardProxyUserEntry } from '../lib/index'
import { makeInterceptionPki, type InterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider, type InterceptingProxy, type TlsOrigin } from './helpers/intercepting-proxy'
import { http2OverTls, http2Request, openInterceptedTls } from './helpers/intercepted-client'
import { LOOPBACK_TEST_POLICY, startOrigin, startProxy } from './helpers/servers'
import { basic, openTunnel, rawExchange } from './helpers/raw-client'
import { startTcpDestination, echoesThrough } from './helpers/tcp-destination'

const VALUE = 'REAL1/ab+cd!ef=gh'
const PLACEHOLDER = 'PLACEHOLDER_ONE'

interface Setup {
  pki: InterceptionPki
  origin: TlsOrigin
  proxy: InterceptingProxy
  options: (users: Record<string, string | ForwardProxyUserEntry>) => ForwardProxyOptions
}

async function setUp (t: Test, users: Record<string, string | ForwardProxyUserEntry>): Promise<Setup> {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const options = (current: Record<string, string | ForwardProxyUserEntry>): ForwardProxyOptions => ({
    destinations: LOOPBACK_TEST_POLICY,
    auth: { users: current },
    secrets: [{ name: 'one', value: VALUE, hosts: [`127.0.0.1:${origin.port}`], placeholder: PLACEHOLDER }]
  })
  const proxy = await startInterceptingProxy(t, pki, { proxy: options(users), interception: { certificateProvider: staticProvider(pki) } })
  return { pki, origin, proxy, options }
}

/** An intercepted HTTP/2 connection to the origin, opened as `user`. */
async function h2Tunnel (t: Test, setup: Setup, user: string, password: string): Promise<ClientHttp2Session> {
  const authority = `127.0.0.1:${setup.origin.port}`
  const socket = await openInterceptedTls(t, setup.proxy.port, authority, { ca: setup.pki.operatorCa.cert, alpn: ['h2'] }, { 'Proxy-Authorization': basic(user, password) })
  return await http2OverTls(t, socket, authority)
}

const withPlaceholder = (path: string): Record<string, string> => ({ ':path': path, authorization: `Bearer ${PLACEHOLDER}` })

test('a user removed while its intercepted HTTP/2 tunnel is open gets 403 for the next request inside, the tunnel is closed, nothing reaches the origin', async (t) => {
  const setup = await setUp(t, { agent: { password: 'pw-a', secrets: ['one'] }, other: 'pw-o' })
  const session = await h2Tunnel(t, setup, 'agent', 'pw-a')
  t.equal((await http2Request(session, withPlaceholder('/before'))).status, 200)
  t.equal(setup.origin.requests[0]?.headers.authorization, `Bearer ${VALUE}`)

  setup.proxy.app.forwardProxy.reconfigure(setup.options({ other: 'pw-o' }))
  const closed = new Promise<void>((resolve) => session.once('close', () => resolve()))
  const after = await http2Request(session, withPlaceholder('/after'))
  t.equal(after.status, 403)
  t.match(after.headers['proxy-status'], /error=http_request_denied; details="tunnel user no longer allowed"/)
  t.notOk(after.body.includes(VALUE))
  await closed
  t.pass('the tunnel was closed (GOAWAY)')

  // Sent after the refusal: had /after left the proxy, the origin would have seen it first.
  const probe = await h2Tunnel(t, setup, 'other', 'pw-o')
  t.equal((await http2Request(probe, { ':path': '/probe' })).status, 200)
  t.same(setup.origin.requests.map((seen) => seen.url), ['/before', '/probe'])
})

test('a changed password revokes the intercepted tunnels opened with the old one', async (t) => {
  const setup = await setUp(t, { agent: 'pw-a' })
  const session = await h2Tunnel(t, setup, 'agent', 'pw-a')
  t.equal((await http2Request(session, { ':path': '/before' })).status, 200)
  setup.proxy.app.forwardProxy.reconfigure(setup.options({ agent: 'pw-new' }))
  const after = await http2Request(session, { ':path': '/after' })
  t.equal(after.status, 403)
  t.same(setup.origin.requests.map((seen) => seen.url), ['/before'])
})

test('a secret revoked from a user, or hosts narrowed, apply to the next request of its open intercepted tunnel; a request in flight finishes', async (t) => {
  const setup = await setUp(t, { agent: { password: 'pw-a', secrets: ['one'] } })
  const session = await h2Tunnel(t, setup, 'agent', 'pw-a')
  t.equal((await http2Request(session, withPlaceholder('/granted'))).status, 200)

  setup.proxy.app.forwardProxy.reconfigure(setup.options({ agent: { password: 'pw-a', secrets: [] } }))
  const refused = await http2Request(session, withPlaceholder('/revoked'))
  t.equal(refused.status, 403)
  t.match(refused.headers['proxy-status'], /details="secret not granted to this user"/)
  t.equal((await http2Request(session, { ':path': '/plain' })).status, 200, 'the user itself is still admitted')

  setup.proxy.app.forwardProxy.reconfigure(setup.options({ agent: { password: 'pw-a', allowedHosts: ['elsewhere.example'] } }))
  const narrowed = await http2Request(session, { ':path': '/narrowed' })
  t.equal(narrowed.status, 403)
  t.match(narrowed.headers['proxy-status'], /details="host not allowed for this user"/)
  t.same(setup.origin.requests.map((seen) => [seen.url, seen.headers.authorization]), [['/granted', `Bearer ${VALUE}`], ['/plain', undefined]])
})

test('an open opaque tunnel is closed when its user is removed or its destination is no longer allowed; a tunnel still admitted goes on', async (t) => {
  const destination = await startTcpDestination(t)
  const users = { gone: 'pw-g', narrowed: { password: 'pw-n', allowedHosts: ['127.0.0.1'] }, kept: 'pw-k' }
  const proxy = await startProxy(t, { auth: { users } })
  const open = async (user: string, password: string): Promise<{ ended: Promise<void>, upstreamEnded: Promise<void>, socket: import('node:net').Socket, upstream: import('node:net').Socket }> => {
    const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`, { 'Proxy-Authorization': basic(user, password) })
    t.teardown(() => { tunnel.socket.destroy() })
    t.equal(tunnel.status, 200)
    const upstream = await destination.nextConnection()
    upstream.resume()
    return {
      ended: new Promise((resolve) => tunnel.socket.once('close', () => resolve())),
      upstreamEnded: new Promise((resolve) => upstream.once('end', () => resolve())),
      socket: tunnel.socket,
      upstream
    }
  }
  const gone = await open('gone', 'pw-g')
  const narrowed = await open('narrowed', 'pw-n')
  const kept = await open('kept', 'pw-k')

  proxy.app.forwardProxy.reconfigure({ destinations: LOOPBACK_TEST_POLICY, auth: { users: { narrowed: { password: 'pw-n', allowedHosts: ['localhost'] }, kept: 'pw-k' } } })
  await Promise.all([gone.ended, gone.upstreamEnded, narrowed.ended, narrowed.upstreamEnded])
  t.pass('the removed user\'s tunnel and the tunnel to a host its user may no longer reach were closed, both sides')
  await echoesThrough(kept.socket, kept.upstream, 'still here')
  t.pass('the tunnel still admitted relays')

  proxy.app.forwardProxy.reconfigure({ destinations: { ...LOOPBACK_TEST_POLICY, deniedHosts: ['127.0.0.1'] }, auth: { users: { kept: 'pw-k' } } })
  await Promise.all([kept.ended, kept.upstreamEnded])
  t.pass('a tunnel to a destination now denied is closed')
})

test('a pooled keep-alive connection to a destination the new policy refuses is not reused: the next request is refused, nothing reaches it', async (t) => {
  const origin = await startOrigin(t)
  // localhost passes every host rule: only the address check at dial time can refuse it.
  const proxy = await startProxy(t, { destinations: LOOPBACK_TEST_POLICY })
  const get = async (path: string): Promise<string> => (await rawExchange(proxy.port, `GET http://localhost:${origin.port}${path} HTTP/1.1\r\nHost: localhost:${origin.port}\r\nConnection: close\r\n\r\n`)).text
  t.match(await get('/first'), /^HTTP\/1\.1 200 /)
  proxy.app.forwardProxy.reconfigure({ destinations: { allowedPorts: '*' } })
  const refused = await get('/second')
  t.match(refused, /^HTTP\/1\.1 403 /)
  t.match(refused, /proxy-status: [^\r]*error=destination_ip_prohibited/i)
  t.same(origin.requests.map((seen) => seen.url), ['/first'], 'the pooled connection was not used for the refused destination')
})

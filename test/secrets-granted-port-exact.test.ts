// A secret is granted to a host and a port: an entry without a port means 443, another port must
// be named. Another port on a granted host (another service, perhaps one the agent runs itself)
// never gets the value, and its tunnels are not intercepted on the secret's account.
import { test, type Test } from 'tap'
import { makeInterceptionPki, type InterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider, interceptAll, type InterceptingProxy, type TlsOrigin } from './helpers/intercepting-proxy'
import { openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'

const VALUE = 'REAL1/ab+cd!ef=gh'
const PLACEHOLDER = 'PLACEHOLDER_ONE'

interface Setup {
  pki: InterceptionPki
  granted: TlsOrigin
  other: TlsOrigin
  proxy: InterceptingProxy
}

/** Two origins on localhost; the secret is granted to the first one's port (or to `hosts`). */
async function setUp (t: Test, hosts?: (granted: TlsOrigin) => string[]): Promise<Setup> {
  const pki = await makeInterceptionPki(t)
  const granted = await startTlsOrigin(t, pki)
  const other = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { secrets: [{ name: 'one', value: VALUE, hosts: hosts?.(granted) ?? [`localhost:${granted.port}`], placeholder: PLACEHOLDER }] },
    // Everything is intercepted here, so only the grant decides.
    interception: interceptAll(pki)
  })
  return { pki, granted, other, proxy }
}

/** One request through an intercepted tunnel to `authority`, with the placeholder unless `plain`. */
async function send (t: Test, setup: Setup, authority: string, path: string, plain = false): Promise<{ status: number, head: string, body: string }> {
  const socket = await openInterceptedTls(t, setup.proxy.port, authority, { ca: setup.pki.operatorCa.cert })
  const credential = plain ? '' : `Authorization: Bearer ${PLACEHOLDER}\r\n`
  return await rawTlsExchange(socket, `GET ${path} HTTP/1.1\r\nHost: ${authority}\r\n${credential}Connection: close\r\n\r\n`)
}

/**
 * Sends a request without a placeholder to `origin` and checks it is the only one it got: had a
 * refused request before it been sent, it would have come first.
 */
async function onlyProbeArrived (t: Test, setup: Setup, origin: TlsOrigin): Promise<void> {
  t.equal((await send(t, setup, `localhost:${origin.port}`, '/probe', true)).status, 200, 'the probe went through')
  t.same(origin.requests.map((seen) => seen.url), ['/probe'], 'nothing was sent there before the probe')
}

test('a secret granted to localhost:PORT1 is refused toward localhost:PORT2 with 403, nothing sent there', async (t) => {
  const setup = await setUp(t)
  const refused = await send(t, setup, `localhost:${setup.other.port}`, '/steal')
  t.equal(refused.status, 403)
  t.match(refused.head, /proxy-status: fastify-forward-proxy; error=http_request_denied; details="secret not allowed for this destination"/i)
  t.notOk(refused.body.includes(VALUE))
  await onlyProbeArrived(t, setup, setup.other)

  const allowed = await send(t, setup, `localhost:${setup.granted.port}`, '/mine')
  t.equal(allowed.status, 200, 'the granted port gets the value')
  t.same(setup.granted.requests.map((seen) => seen.headers.authorization), [`Bearer ${VALUE}`])
})

test('a secret entry without a port means 443: another port on that host is refused', async (t) => {
  const setup = await setUp(t, () => ['localhost'])
  const refused = await send(t, setup, `localhost:${setup.granted.port}`, '/steal')
  t.equal(refused.status, 403)
  t.match(refused.head, /details="secret not allowed for this destination"/)
  await onlyProbeArrived(t, setup, setup.granted)
})

test('a secret entry with a bracketed IPv6 literal or a wildcard names its port too', async (t) => {
  const setup = await setUp(t, (granted) => [`*.example.test:${granted.port}`, `[::1]:${granted.port}`, `127.0.0.1:${granted.port}`])
  const allowed = await send(t, setup, `127.0.0.1:${setup.granted.port}`, '/mine')
  t.equal(allowed.status, 200)
  const refused = await send(t, setup, `127.0.0.1:${setup.other.port}`, '/steal')
  t.equal(refused.status, 403)
  await onlyProbeArrived(t, setup, setup.other)
})

test('the grant decides interception by host and port: a tunnel to another port of a granted host stays opaque', async (t) => {
  const pki = await makeInterceptionPki(t)
  const granted = await startTlsOrigin(t, pki)
  const other = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { secrets: [{ name: 'one', value: VALUE, hosts: [`localhost:${granted.port}`], placeholder: PLACEHOLDER }] },
    interception: { certificateProvider: staticProvider(pki), selector: { shouldIntercept: () => false } }
  })
  // The operator CA only validates an intercepted tunnel; the destination CA only an opaque one.
  const intercepted = await openInterceptedTls(t, proxy.port, `localhost:${granted.port}`, { ca: pki.operatorCa.cert })
  t.equal((await rawTlsExchange(intercepted, `GET / HTTP/1.1\r\nHost: localhost:${granted.port}\r\nConnection: close\r\n\r\n`)).status, 200, 'the granted port is intercepted')
  const opaque = await openInterceptedTls(t, proxy.port, `localhost:${other.port}`, { ca: pki.destinationCa.cert })
  const answer = await rawTlsExchange(opaque, `GET / HTTP/1.1\r\nHost: localhost:${other.port}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`)
  t.equal(answer.status, 200, 'the other port is relayed opaquely: the origin itself answered')
  t.equal(other.requests[0]?.headers.authorization, `Bearer ${PLACEHOLDER}`, 'the placeholder went through as it was, never the value')
})

// An application's callbacks may throw or reject with anything, `undefined` and `null` included.
// Fastify's and @fastify/basic-auth's `done` read a missing error as a success: each such value
// must still refuse, never admit, open a tunnel or crash the process.
/* eslint-disable prefer-promise-reject-errors, no-throw-literal -- the point of this file: what applications do anyway */
import { test } from 'tap'
import { startOrigin, startProxy } from './helpers/servers'
import { basic, openTunnel, rawExchange } from './helpers/raw-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'
import { openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'
import { startCountingDestination } from './helpers/counting-destination'

const THROWN: Array<[string, () => unknown]> = [
  ['rejects with undefined', async () => await Promise.reject(undefined)],
  ['rejects with null', async () => await Promise.reject(null)],
  ['throws undefined', () => { throw undefined }],
  ['throws null', () => { throw null }],
  ['rejects with 0', async () => await Promise.reject(0)]
]

test('a credential check that throws or rejects with a value that is not an Error answers 407: never admitted, never a crash', async (t) => {
  const origin = await startOrigin(t)
  for (const [name, check] of THROWN) {
    const proxy = await startProxy(t, { auth: { validate: (_user, password) => password === 'right-password' ? true : check() as boolean } })
    const forwarded = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basic('eve', 'wrong')}\r\nConnection: close\r\n\r\n`)
    t.equal(forwarded.status, 407, `${name}: http://`)
    t.match(forwarded.text, /proxy-status: fastify-forward-proxy; error=http_request_denied/i)
    const tunnel = await openTunnel(proxy.port, `127.0.0.1:${origin.port}`, { 'proxy-authorization': basic('eve', 'wrong') })
    t.teardown(() => { tunnel.socket.destroy() })
    t.equal(tunnel.status, 407, `${name}: CONNECT`)
    const admitted = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/ok HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basic('eve', 'right-password')}\r\nConnection: close\r\n\r\n`)
    t.equal(admitted.status, 200, `${name}: the process still serves`)
  }
  t.same(origin.requests.map((seen) => seen.url), THROWN.map(() => '/ok'), 'only the admitted requests reached the origin')
})

test('a destination filter or an interception selector that throws or rejects with a value that is not an Error answers the CONNECT 500: the tunnel never opens', async (t) => {
  const pki = await makeInterceptionPki(t)
  const destination = await startCountingDestination(t)
  for (const [name, thrown] of THROWN) {
    for (const where of ['destinationFilters', 'selector'] as const) {
      const interception = where === 'destinationFilters'
        ? { certificateProvider: staticProvider(pki), destinationFilters: [{ allowTunnel: () => thrown() as boolean }] }
        : { certificateProvider: staticProvider(pki), selector: { shouldIntercept: () => thrown() as boolean } }
      const proxy = await startInterceptingProxy(t, pki, { interception })
      const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
      t.teardown(() => { tunnel.socket.destroy() })
      t.equal(tunnel.status, 500, `${where} ${name}`)
      t.match(tunnel.head, /error=proxy_internal_error/)
    }
  }
  await expectNothingDialedBefore(t, destination.accepts, 'no tunnel reached the destination')
})

test('a response transform that throws null answers 500 with Proxy-Status and none of the destination\'s headers', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki, (_req, res) => { res.setHeader('x-origin', 'leaked'); res.end('body') })
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { transforms: [{ transformResponse: () => { throw null } }] },
    interception: { certificateProvider: staticProvider(pki), selector: { shouldIntercept: () => true } }
  })
  const authority = `127.0.0.1:${origin.port}`
  const inner = await openInterceptedTls(t, proxy.port, authority, { ca: pki.operatorCa.cert })
  const answer = await rawTlsExchange(inner, `GET / HTTP/1.1\r\nHost: ${authority}\r\nConnection: close\r\n\r\n`)
  t.equal(answer.status, 500)
  t.match(answer.head, /proxy-status: fastify-forward-proxy; error=proxy_internal_error/i)
  t.notMatch(answer.head, /x-origin/i)
})

import { test } from 'tap'
import { startOrigin, startProxy, startSentinel } from './helpers/servers'
import { basic, openTunnel, rawExchange, retryAfterOf } from './helpers/raw-client'
import { LOOPBACK_ORIGINS, portOf, startConfiguredServer } from './helpers/cli-server'
import { connectHttp2, openHttp2Tunnel, startHttp2Proxy } from './helpers/http2-proxy'
import { AuthFailureLimiter, resolveProxySettings } from './helpers/internals'
import { ForwardProxyOptionsError } from '../lib/index'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const USERS = { alice: 's3cret' }

function refusedOption (register: () => unknown): string | null {
  try {
    register()
    return null
  } catch (error) {
    return error instanceof ForwardProxyOptionsError ? error.option : null
  }
}

// Some of the window has passed by the time the 429 is written, and it is rounded up.
function inLockoutWindow (seconds: number | null, windowSeconds: number): boolean {
  return seconds !== null && seconds >= windowSeconds - 60 && seconds <= windowSeconds
}

function forwardedGet (originPort: number, authorization?: string): string {
  const credentials = authorization === undefined ? '' : `Proxy-Authorization: ${authorization}\r\n`
  return `GET http://127.0.0.1:${originPort}/ HTTP/1.1\r\nHost: x\r\n${credentials}Connection: close\r\n\r\n`
}

test('brute force: after maxFailures wrong passwords the client gets 429 http_request_denied even with the right one, with Retry-After saying when the lockout ends, and nothing is forwarded or dialed', async (t) => {
  const origin = await startOrigin(t)
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, { auth: { users: USERS, failureLimit: { maxFailures: 3, window: 600_000 } } })
  for (const guess of ['a', 'b', 'c']) {
    const refused = await rawExchange(proxy.port, forwardedGet(origin.port, basic('alice', guess)))
    t.equal(refused.status, 407, `guess ${guess}: 407 while under the limit`)
  }
  const locked = await rawExchange(proxy.port, forwardedGet(origin.port, basic('alice', 's3cret')))
  t.equal(locked.status, 429, 'the right password no longer helps')
  t.match(locked.text, /\r\nproxy-status: fastify-forward-proxy; error=http_request_denied; details="too many failed authentication attempts"\r\n/i)
  t.notMatch(locked.text, /s3cret|YWxpY2U6czNjcmV0/, 'no credential echoed')
  t.ok(inLockoutWindow(retryAfterOf(locked.text), 600), 'Retry-After: the seconds left of the 600 s window')
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${sentinel.port}`, { 'Proxy-Authorization': basic('alice', 's3cret') })
  t.equal(tunnel.status, 429, 'CONNECT is locked out too')
  t.ok(inLockoutWindow(retryAfterOf(tunnel.head), 600), 'the CONNECT\'s 429 says when too')
  await new Promise((resolve) => tunnel.socket.once('close', resolve))
  await expectNothingDialedBefore(t, origin.accepts, 'nothing forwarded')
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing dialed')
})

test('brute force: missing credentials are not counted as failures (browsers ask first without them)', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { auth: { users: USERS, failureLimit: { maxFailures: 2, window: 600_000 } } })
  for (let attempt = 0; attempt < 5; attempt++) {
    t.equal((await rawExchange(proxy.port, forwardedGet(origin.port))).status, 407)
  }
  t.equal((await rawExchange(proxy.port, forwardedGet(origin.port, basic('alice', 's3cret')))).status, 200)
})

test('brute force: the default limit is 10 wrong credentials per client; failureLimit false turns it off', async (t) => {
  const origin = await startOrigin(t)
  const guarded = await startProxy(t, { auth: { users: USERS } })
  const open = await startProxy(t, { auth: { users: USERS, failureLimit: false } })
  for (let attempt = 0; attempt < 10; attempt++) {
    t.equal((await rawExchange(guarded.port, forwardedGet(origin.port, basic('mallory', `guess-${attempt}`)))).status, 407)
    t.equal((await rawExchange(open.port, forwardedGet(origin.port, basic('mallory', `guess-${attempt}`)))).status, 407)
  }
  t.equal((await rawExchange(guarded.port, forwardedGet(origin.port, basic('alice', 's3cret')))).status, 429, 'default: locked after 10')
  t.equal((await rawExchange(open.port, forwardedGet(origin.port, basic('alice', 's3cret')))).status, 200, 'false: never locked')
})

test('brute force over HTTP/2: a locked client\'s CONNECT stream gets 429 and the destination is never dialed', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startHttp2Proxy(t, { auth: { users: USERS, failureLimit: { maxFailures: 1, window: 600_000 } } })
  const session = await connectHttp2(t, proxy)
  const wrong = await openHttp2Tunnel(session, `127.0.0.1:${sentinel.port}`, { 'proxy-authorization': basic('alice', 'nope') })
  t.equal(wrong.headers[':status'], 407)
  const locked = await openHttp2Tunnel(session, `127.0.0.1:${sentinel.port}`, { 'proxy-authorization': basic('alice', 's3cret') })
  t.equal(locked.headers[':status'], 429)
  t.match(locked.headers['proxy-status'], /error=http_request_denied/)
  t.ok(inLockoutWindow(Number(locked.headers['retry-after']), 600), 'Retry-After on the stream\'s 429')
  await expectNothingDialedBefore(t, sentinel.accepts, 'the destination was never dialed')
})

test('brute force in the ready-to-run server: authFailureLimit in the configuration file locks a guessing client out', async (t) => {
  const origin = await startOrigin(t)
  const server = await startConfiguredServer(t, { listen: [{ host: '127.0.0.1', port: 0 }], users: USERS, authFailureLimit: { maxFailures: 1, window: 600_000 }, destinations: LOOPBACK_ORIGINS })
  const port = portOf(server.urls[0])
  t.equal((await rawExchange(port, forwardedGet(origin.port, basic('alice', 'nope')))).status, 407)
  const locked = await rawExchange(port, forwardedGet(origin.port, basic('alice', 's3cret')))
  t.equal(locked.status, 429)
  t.ok(inLockoutWindow(retryAfterOf(locked.text), 600), 'with Retry-After')
  await expectNothingDialedBefore(t, origin.accepts, 'nothing forwarded')
})

test('brute force: a window ends window ms after the first counted failure of the client, Retry-After counts down to it in whole seconds, and the clients tracked are bounded', async (t) => {
  let now = 0
  const limiter = new AuthFailureLimiter({ maxFailures: 2, window: 2500 }, () => now)
  limiter.recordFailure('192.0.2.1')
  limiter.recordFailure('192.0.2.1')
  t.ok(limiter.isLocked('192.0.2.1'))
  t.equal(limiter.secondsUntilUnlocked('192.0.2.1'), 3, '2.5 s left: 3, rounded up')
  t.notOk(limiter.isLocked('192.0.2.2'), 'other clients are not affected')
  t.equal(limiter.secondsUntilUnlocked('192.0.2.2'), 0, 'no window: nothing to wait for')
  now = 2499
  t.ok(limiter.isLocked('192.0.2.1'), 'still locked inside the window')
  t.equal(limiter.secondsUntilUnlocked('192.0.2.1'), 1, 'never less than 1 while locked')
  now = 2500
  t.notOk(limiter.isLocked('192.0.2.1'), 'the window ended: attempts allowed again')
  limiter.recordFailure('192.0.2.1')
  t.notOk(limiter.isLocked('192.0.2.1'), 'a new window counts from zero')
  for (let client = 0; client < 10_001; client++) limiter.recordFailure(`10.0.${client >> 8}.${client & 255}`)
  limiter.recordFailure('10.0.0.0')
  t.notOk(limiter.isLocked('10.0.0.0'), 'the oldest client was forgotten past 10,000 tracked')
})

test('brute force: a bad auth.failureLimit is refused at registration, naming the option', async (t) => {
  t.equal(refusedOption(() => resolveProxySettings({ auth: { users: USERS, failureLimit: { maxFailures: 0 } } })), 'auth.failureLimit.maxFailures')
  t.equal(refusedOption(() => resolveProxySettings({ auth: { users: USERS, failureLimit: { window: 1.5 } } })), 'auth.failureLimit.window')
  t.equal(refusedOption(() => resolveProxySettings({ auth: { users: USERS, failureLimit: { tries: 3 } as never } })), 'auth.failureLimit.tries')
  t.equal(refusedOption(() => resolveProxySettings({ auth: { users: USERS, failureLimit: true as never } })), 'auth.failureLimit')
})

// Proxy authentication: the Basic challenge, credential checks in constant time, and the
// per-address failure limit.

import basicAuth from '@fastify/basic-auth'
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify'
import { createHash, timingSafeEqual } from 'node:crypto'
import type { ForwardProxyCredentialCheck, ForwardProxyUser } from '../../types/user'
import { ProxyError, retryAfterSeconds } from '../protocol/errors'
import { AUTH_LOCKOUT_DETAILS, refusedBy } from '../protocol/refusals'
import type { UserRecheck } from './tunnel-grant'
import { ObjectSlot } from '../protocol/object-slot'
import type { AuthFailureCount } from './limit-store'
import type { SharedLimits } from './shared-limits'
import { passedAuthorizationsOf, userFromEntry } from './users-table'

/** The `Proxy-Authenticate` challenge for a realm. */
export function proxyAuthenticateChallenge (realm: string): string {
  return `Basic realm="${realm}", charset="UTF-8"`
}

/**
 * Registers @fastify/basic-auth in proxy mode (`Proxy-Authorization`, 407) on `instance` and
 * returns the hook that authenticates. Each attempt is checked with `currentCheck()` (the users or `validate` in
 * force, which a reconfiguration replaces), except a header value that a users table passed
 * before, which is admitted by a lookup (see `credentialCheckFromUsers`). A passing check sets `request.proxyUser`; any failure, including a
 * malformed header or a check that throws, ends in a 407 answered by the proxy error handler.
 * With a `failureLimit`, a client address that sent too many wrong credentials gets 429 for
 * the rest of its window, without its credentials being checked; its checks wait their turn so
 * that simultaneous attempts cannot overrun the limit.
 */
export async function registerProxyAuthentication (
  instance: FastifyInstance,
  realm: string,
  currentCheck: () => ForwardProxyCredentialCheck,
  failureLimit: AuthFailureLimitSettings | null,
  shared: SharedLimits | null = null
): Promise<onRequestHookHandler> {
  const limiter = failureLimit === null ? null : new AuthFailureLimiter(failureLimit)
  const sharedFailures = limiter === null || failureLimit === null ? null : shared
  // Failures any process counted in the store, this one's included, reach every process.
  sharedFailures?.store.onAuthFailures((client, count) => limiter?.adopt(client, count))
  // The usual attempt (a users table, no lockout under way) is decided without a promise: the
  // plugin's `done` is called before validate returns. A failure counted in a shared store is
  // answered once counted there, so the next attempt, on any process, finds it counted.
  const decide = (
    attempt: Attempt,
    credentialCheck: ForwardProxyCredentialCheck,
    request: FastifyRequest,
    client: string,
    verdict: boolean | ForwardProxyUser
  ): Promise<void> | undefined => {
    const { username, password } = attempt
    limiter?.settle(client, verdict === false)
    if (verdict === false) {
      const refusal = new ProxyError('http_request_denied', 'Proxy authentication failed.', { status: 407, details: 'invalid credentials' })
      const recorded = sharedFailures?.recordAuthFailure(client, (failureLimit as AuthFailureLimitSettings).window)
      if (recorded === undefined || recorded === null) throw refusal
      return recorded.then((count) => {
        if (count !== null) limiter?.adopt(client, count)
        throw refusal
      })
    }
    admitUser(request, username, password, verdict)
    // The header that carried credentials a users table passed admits its later requests at once.
    if (attempt.authorization !== undefined) passedAuthorizationsOf(credentialCheck)?.remember(attempt.authorization, username, password)
    return undefined
  }
  // Resolves once decided, or returns undefined when decided already; throws a refusal.
  const check = (attempt: Attempt, request: FastifyRequest, client: string): Promise<void> | undefined => {
    // The check in force when it runs: an attempt that waited its turn through a reconfiguration
    // meets the new users.
    const credentialCheck = currentCheck()
    let verdict: ReturnType<ForwardProxyCredentialCheck>
    try {
      verdict = credentialCheck(attempt.username, attempt.password, request)
    } catch (error) {
      // Answered with 407 but, as an error of the check rather than a guess, not counted.
      limiter?.settle(client, false)
      throw checkFailure(error)
    }
    if (!isThenable(verdict)) return decide(attempt, credentialCheck, request, client, verdict)
    return Promise.resolve(verdict).then((settled) => decide(attempt, credentialCheck, request, client, settled), (error: unknown) => {
      limiter?.settle(client, false)
      throw checkFailure(error)
    })
  }
  await instance.register(basicAuth, {
    proxyMode: true,
    // RFC 9110 section 11.3 puts one or more spaces between the scheme and the credentials.
    strictCredentials: false,
    authenticate: { realm },
    // Every failure goes through the plugin's `done`, which makes it a 407 unless it carries a status.
    validate (username, password, request, _reply, done) {
      const client = clientAddressOf(request)
      // The header basic-auth has just parsed these credentials from.
      const authorization = request.headers['proxy-authorization']
      const attempt: Attempt = { username, password, authorization: typeof authorization === 'string' ? authorization : undefined }
      let pending: Promise<void> | undefined
      try {
        const admitted = limiter === null ? true : limiter.admitNow(client)
        if (admitted === false) throw lockedOut(limiter, client)
        pending = admitted === true
          ? check(attempt, request, client)
          : limiter?.admit(client).then((waited) => {
            if (!waited) throw lockedOut(limiter, client)
            return check(attempt, request, client)
          })
      } catch (error) {
        done(checkFailure(error))
        return
      }
      // A promise returned is settled into `done` by the plugin, which takes a rejection with
      // no value for success: every rejection is an Error by then (see checkFailure).
      if (pending !== undefined) return pending
      done()
    }
  })
  const parseAndCheck = instance.basicAuth
  // A header whose credentials a users table passed before is admitted without parsing it or
  // checking its credentials again, unless the client is locked out or has checks waiting.
  return function authenticateProxyClient (this: FastifyInstance, request, reply, done) {
    // Node keeps the first of several: the others would go unchecked behind a valid one.
    if (repeatsProxyAuthorization(request.raw.rawHeaders)) {
      done(Object.assign(new Error('Proxy-Authorization is repeated.'), { statusCode: 407 }))
      return
    }
    const authorization = request.headers['proxy-authorization']
    const passed = typeof authorization === 'string' ? passedAuthorizationsOf(currentCheck())?.lookup(authorization) : undefined
    if (passed !== undefined && (limiter === null || limiter.admitsUnchecked(clientAddressOf(request)))) {
      admitUser(request, passed.username, passed.password, userFromEntry(passed.entry))
      done()
      return
    }
    parseAndCheck.call(this, request, reply, done)
  }
}

/**
 * What a credential check threw, as an Error: @fastify/basic-auth's `done` reads a missing
 * error (a check that rejected with `undefined`) as a success and crashes on `null`, so a thrown
 * value that is not an Error becomes one (answered 407, as any throw of the check). The value
 * itself is not kept: it could hold the password.
 */
function checkFailure (thrown: unknown): Error {
  return thrown instanceof Error ? thrown : new Error('The credential check failed with a value that is not an Error.')
}

/** True when a request head carries more than one `Proxy-Authorization` field. */
function repeatsProxyAuthorization (rawHeaders: readonly string[]): boolean {
  let seen = false
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string
    if (name.length !== PROXY_AUTHORIZATION.length || name.toLowerCase() !== PROXY_AUTHORIZATION) continue
    if (seen) return true
    seen = true
  }
  return false
}

const PROXY_AUTHORIZATION = 'proxy-authorization'

/** One set of credentials being checked: as parsed, and the header they came in. */
interface Attempt {
  readonly username: string
  readonly password: string
  readonly authorization: string | undefined
}

// The TCP peer, never a forwarded-for header the client could write itself.
function clientAddressOf (request: FastifyRequest): string {
  return request.raw.socket.remoteAddress ?? ''
}

/** Sets `request.proxyUser` for credentials that passed; a CONNECT keeps them for the tunnel's later rechecks. */
function admitUser (request: FastifyRequest, username: string, password: string, verdict: true | ForwardProxyUser): void {
  request.proxyUser = verdict === true ? { name: username } : verdict
  // Only a CONNECT opens a tunnel whose user is checked again after a reconfiguration.
  if (request.raw.method === 'CONNECT') credentialsOf.set(request, { username, password })
}

function isThenable<T> (value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as Partial<PromiseLike<T>> | null)?.then === 'function'
}

// The 429 says when the lockout ends (`Retry-After`), so a client with the right credentials
// waits that long instead of guessing; a guesser learns nothing the documented window does not say.
function lockedOut (limiter: AuthFailureLimiter | null, client: string): ProxyError {
  const retryAfter = limiter?.secondsUntilUnlocked(client) ?? 0
  return refusedBy('auth.failureLimit', new ProxyError('http_request_denied', 'Too many failed proxy authentication attempts.', { status: 429, details: AUTH_LOCKOUT_DETAILS, ...(retryAfter > 0 ? { retryAfter } : {}) }))
}

// What a CONNECT passed authentication with, so that the tunnel it opens can be checked again
// after a reconfiguration. Kept on the request object, as long as it lives (the tunnel's).
const credentialsOf = new ObjectSlot<{ readonly username: string, readonly password: string }>('proxyCredentials')

/**
 * How to check again, against `currentCheck()` (the users or `validate` in force at the time),
 * the credentials `request` was authenticated with; null for a request that was not
 * authenticated here.
 */
export function userRecheckOf (request: FastifyRequest, currentCheck: () => ForwardProxyCredentialCheck | null): UserRecheck | null {
  const credentials = credentialsOf.get(request)
  if (credentials === undefined) return null
  const { username, password } = credentials
  return async () => {
    const check = currentCheck()
    if (check === null) return false
    const verdict = await check(username, password, request)
    return verdict === false ? false : verdict === true ? { name: username } : verdict
  }
}

/**
 * Compares two secrets in time that depends on neither their contents nor their lengths:
 * both are hashed to fixed-size digests first, then compared with `crypto.timingSafeEqual`.
 */
export function timingSafeEqualText (given: string, expected: string): boolean {
  const a = createHash('sha256').update(given, 'utf8').digest()
  const b = createHash('sha256').update(expected, 'utf8').digest()
  return timingSafeEqual(a, b)
}

/** Failed-credential limit per client address (brute-force guard), as resolved from `auth.failureLimit`. */
export interface AuthFailureLimitSettings {
  /** Failed attempts allowed per client address within `window`; the next attempt is refused. */
  readonly maxFailures: number
  /** Milliseconds from a client's first counted failure until its count starts again at zero. */
  readonly window: number
}

/** Defaults of `auth.failureLimit`: 10 failed attempts per client address per minute. */
export const DEFAULT_AUTH_FAILURE_LIMIT: AuthFailureLimitSettings = { maxFailures: 10, window: 60_000 }

// Bounds the memory an attacker spraying from many addresses can make us hold; the oldest
// windows are forgotten first.
const MAX_TRACKED_CLIENTS = 10_000

interface FailureWindow {
  readonly endsAt: number
  failures: number
}

// Checks of one client address under way, and the attempts waiting for one of them to end.
interface ChecksInFlight {
  running: number
  readonly waiting: Array<(admitted: boolean) => void>
}

/**
 * Counts failed credential checks per client address in fixed windows. Once a client reaches
 * `maxFailures`, every further attempt from it, right or wrong, is refused until its window
 * ends: a guesser learns nothing more, whatever it tries.
 *
 * Checks run through {@link AuthFailureLimiter.admit} and {@link AuthFailureLimiter.settle}: a
 * client never has more checks under way than it has failures left, so attempts that arrive
 * together (pipelined on one connection, or on many connections at once) cannot all be checked
 * before the first of their failures is counted.
 */
export class AuthFailureLimiter {
  readonly #settings: AuthFailureLimitSettings
  readonly #now: () => number
  readonly #windows = new Map<string, FailureWindow>()
  readonly #inFlight = new Map<string, ChecksInFlight>()

  constructor (settings: AuthFailureLimitSettings, now: () => number = Date.now) {
    this.#settings = settings
    this.#now = now
  }

  /** True when `client` has used up its failed attempts for the current window. */
  isLocked (client: string): boolean {
    return this.#failures(client) >= this.#settings.maxFailures
  }

  /** Whole seconds, at least 1, until `client`'s current window ends (0 when it has none). */
  secondsUntilUnlocked (client: string): number {
    const window = this.#current(client)
    return window === undefined ? 0 : retryAfterSeconds(window.endsAt - this.#now())
  }

  /**
   * Waits until `client` may have one more credential check under way, and reserves it: true
   * when the check may run (then call {@link AuthFailureLimiter.settle} exactly once when it has
   * ended), false when the client is locked out. The reservation is taken synchronously, before
   * the returned promise settles, so it counts against the next attempt whatever runs between.
   */
  admit (client: string): Promise<boolean> {
    const now = this.admitNow(client)
    if (now !== null) return Promise.resolve(now)
    const queue = this.#checksOf(client).waiting
    return new Promise((resolve) => { queue.push(resolve) })
  }

  /**
   * {@link AuthFailureLimiter.admit} when the answer is known at once: true (reserved: settle
   * it), false (locked out), or null when the check must wait its turn (then call `admit`).
   */
  admitNow (client: string): boolean | null {
    if (this.isLocked(client)) return false
    const checks = this.#checksOf(client)
    if (checks.waiting.length > 0 || !this.#hasRoom(client, checks)) return null
    checks.running += 1
    return true
  }

  /**
   * True when `client` may be admitted with credentials that passed before, without a check:
   * it is not locked out and has no check waiting its turn (one of those may still lock it out).
   */
  admitsUnchecked (client: string): boolean {
    return !this.isLocked(client) && (this.#inFlight.get(client)?.waiting.length ?? 0) === 0
  }

  #checksOf (client: string): ChecksInFlight {
    let checks = this.#inFlight.get(client)
    if (checks === undefined) {
      checks = { running: 0, waiting: [] }
      this.#inFlight.set(client, checks)
    }
    return checks
  }

  /** Ends a check admitted by {@link AuthFailureLimiter.admit}; `failed` counts it as a failure. */
  settle (client: string, failed: boolean): void {
    if (failed) this.recordFailure(client)
    const checks = this.#inFlight.get(client)
    if (checks === undefined) return
    checks.running -= 1
    this.#admitWaiting(client, checks)
  }

  /**
   * Takes in the count of `client`'s failures kept for every process (by a shared store), with
   * its window, when it is higher than this process's own count.
   */
  adopt (client: string, count: AuthFailureCount): void {
    const window = this.#current(client)
    if (window === undefined || count.failures > window.failures) {
      this.#track(client, { endsAt: this.#now() + count.msLeft, failures: count.failures })
    }
    const checks = this.#inFlight.get(client)
    if (checks !== undefined) this.#admitWaiting(client, checks)
  }

  #admitWaiting (client: string, checks: ChecksInFlight): void {
    while (checks.waiting.length > 0) {
      const locked = this.isLocked(client)
      if (!locked && !this.#hasRoom(client, checks)) break
      if (!locked) checks.running += 1
      checks.waiting.shift()?.(!locked)
    }
    if (checks.running === 0 && checks.waiting.length === 0) this.#inFlight.delete(client)
  }

  /** Counts one failed credential check for `client`. */
  recordFailure (client: string): void {
    const window = this.#current(client)
    if (window !== undefined) {
      window.failures += 1
      return
    }
    this.#track(client, { endsAt: this.#now() + this.#settings.window, failures: 1 })
  }

  #track (client: string, window: FailureWindow): void {
    // Deleted first so that a replaced window counts as the newest.
    this.#windows.delete(client)
    this.#windows.set(client, window)
    for (const oldest of this.#windows.keys()) {
      if (this.#windows.size <= MAX_TRACKED_CLIENTS) break
      this.#windows.delete(oldest)
    }
  }

  // Every check under way may still fail, so together with the failures counted they must stay
  // below the limit.
  #hasRoom (client: string, checks: ChecksInFlight): boolean {
    return this.#failures(client) + checks.running < this.#settings.maxFailures
  }

  #failures (client: string): number {
    return this.#current(client)?.failures ?? 0
  }

  #current (client: string): FailureWindow | undefined {
    const window = this.#windows.get(client)
    if (window === undefined || this.#now() < window.endsAt) return window
    this.#windows.delete(client)
    return undefined
  }
}

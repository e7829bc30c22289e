// Per-user policy: the hosts, concurrent tunnels and request rate one proxy user is allowed,
// from the fields of its ForwardProxyUser (a `users` entry or what `validate` returned).

import type { ForwardProxyDestination } from '../../types/destination'
import type { ForwardProxyUser } from '../../types/user'
import { ForwardProxyOptionsError, ProxyError, retryAfterSeconds } from '../protocol/errors'
import { refusedBy } from '../protocol/refusals'
import { compileHostPattern, matchesAny, type HostPattern } from '../protocol/hosts'
import { isPolicyMode, POLICY_MODE_PROBLEM, type ReportedRefusal } from './report-mode'
import { COUNT_HERE, type SharedLimits } from './shared-limits'

const WINDOW_MS = 60_000
const HOST_NOT_ALLOWED_FOR_USER = 'host not allowed for this user'
// Rate windows of users who stopped sending are dropped once this many are kept.
const MAX_IDLE_WINDOWS = 10_000

/**
 * Checks the policy fields of a `users` entry at registration: `allowedHosts` host patterns,
 * `secrets` names of the `secrets` option, the limits positive integers, `mode` `enforce` or
 * `report`.
 * @throws ForwardProxyOptionsError naming the field.
 */
export function checkUserPolicyFields (user: Readonly<Record<string, unknown>>, option: string, secretNames: readonly string[]): void {
  const problem = policyProblem(user, secretNames)
  if (problem !== null) throw new ForwardProxyOptionsError(`${option}.${problem.field}`, problem.text)
}

function policyProblem (user: Readonly<Record<string, unknown>>, secretNames: readonly string[] | null): { field: string, text: string } | null {
  const { allowedHosts, secrets, maxConcurrentTunnels, requestsPerMinute, mode } = user
  if (allowedHosts !== undefined) {
    if (!Array.isArray(allowedHosts)) return { field: 'allowedHosts', text: 'must be an array of host patterns' }
    const bad = allowedHosts.findIndex((text: unknown) => typeof text !== 'string' || compileHostPattern(text) === null)
    if (bad !== -1) return { field: `allowedHosts[${bad}]`, text: 'is not a host pattern (example.com, *.example.com, *, an IP literal or a CIDR range)' }
  }
  if (secrets !== undefined) {
    if (!Array.isArray(secrets) || secrets.some((name) => typeof name !== 'string')) return { field: 'secrets', text: 'must be an array of secret names' }
    const unknown = secretNames === null ? undefined : (secrets as string[]).find((name) => !secretNames.includes(name))
    if (unknown !== undefined) return { field: 'secrets', text: `names "${unknown}", which the secrets option does not define` }
  }
  for (const [field, value] of [['maxConcurrentTunnels', maxConcurrentTunnels], ['requestsPerMinute', requestsPerMinute]] as const) {
    if (value !== undefined && !(Number.isSafeInteger(value) && (value as number) > 0)) return { field, text: 'must be a positive integer' }
  }
  if (!isPolicyMode(mode)) return { field: 'mode', text: POLICY_MODE_PROBLEM }
  return null
}

/**
 * Enforces each user's own policy, once the destination policy has passed: its hosts, its open
 * tunnels and its requests per minute. Users are told apart by name. A user with none of the
 * fields costs a property read or two per request.
 *
 * With `shared` limits, the requests per minute and open tunnels are counted in their store for
 * every process ({@link UserPolicy.countInStore}, {@link UserPolicy.reserveTunnel}), and in this
 * process only while the store cannot be reached.
 */
export class UserPolicy {
  readonly #openTunnels = new Map<string, number>()
  readonly #windows = new Map<string, { start: number, count: number }>()
  // Compiled once per array: `users` entries are fixed, and a `validate` that returns the same
  // array each time is not compiled again.
  readonly #hostPatterns = new WeakMap<readonly string[], HostPattern[]>()
  readonly #now: () => number
  readonly #shared: SharedLimits | null

  constructor (shared: SharedLimits | null = null, now: () => number = Date.now) {
    this.#shared = shared
    this.#now = now
  }

  /**
   * Checks a proxy request of `user` toward `destination` and counts it against the user's
   * requests per minute (with shared limits, {@link UserPolicy.countInStore} counts it
   * instead: call it next). For a user in report mode (`mode: 'report'`), a host outside
   * `allowedHosts` is returned as a reported refusal instead of thrown (its rate still counts
   * and is enforced). Returns null when nothing was reported.
   * @throws ProxyError 403 `http_request_denied` for a host outside `allowedHosts`; 429
   * `http_request_denied` with `retryAfter` over `requestsPerMinute`; 500 when `validate`
   * returned fields that are not a usable policy.
   */
  admitRequest (user: ForwardProxyUser | null, destination: ForwardProxyDestination): ReportedRefusal | null {
    if (user === null) return null
    const { allowedHosts, requestsPerMinute } = user
    if (allowedHosts === undefined && requestsPerMinute === undefined) return null
    this.#checkFields(user)
    let reported: ReportedRefusal | null = null
    if (!this.allowsHost(user, destination)) {
      const rule = `users.${user.name}.allowedHosts`
      if (user.mode === 'report') reported = { rule, reason: HOST_NOT_ALLOWED_FOR_USER }
      else throw refusedBy(rule, new ProxyError('http_request_denied', 'This user may not reach that destination host.', { details: HOST_NOT_ALLOWED_FOR_USER }))
    }
    if (requestsPerMinute !== undefined && this.#shared === null) this.#count(user.name, requestsPerMinute)
    return reported
  }

  /**
   * With shared limits, counts a request {@link UserPolicy.admitRequest} admitted against the
   * user's requests per minute in the store; null when there is nothing to wait for (no shared
   * limits, no rate, or counted in this process while the store is lost).
   * @throws ProxyError (or rejects with it) 429 `http_request_denied` with `retryAfter` over
   * `requestsPerMinute`; 503 while the store is lost with `onError: 'deny'`.
   */
  countInStore (user: ForwardProxyUser | null): Promise<void> | null {
    const limit = user?.requestsPerMinute
    if (this.#shared === null || user === null || limit === undefined) return null
    const asked = this.#shared.countRequest(user.name, limit, WINDOW_MS)
    if (asked === COUNT_HERE) {
      this.#count(user.name, limit)
      return null
    }
    if (typeof asked === 'number') {
      if (asked > 0) throw rateRefusal(user.name, asked)
      return null
    }
    return asked.then((msLeft) => {
      if (msLeft === COUNT_HERE) this.#count(user.name, limit)
      else if (msLeft > 0) throw rateRefusal(user.name, msLeft)
    })
  }

  /**
   * True when an open tunnel of `user` toward `destination` may stay open under the user's
   * hosts: they allow it, or the user is in report mode (which refuses nothing by host).
   */
  admitsOpenTunnel (user: ForwardProxyUser | null, destination: ForwardProxyDestination): boolean {
    return user?.mode === 'report' || this.allowsHost(user, destination)
  }

  /** True when `user` (null: no authentication) may reach `destination`'s host by its `allowedHosts`. */
  allowsHost (user: ForwardProxyUser | null, destination: ForwardProxyDestination): boolean {
    const allowedHosts = user?.allowedHosts
    return allowedHosts === undefined || (Array.isArray(allowedHosts) && matchesAny(this.#patternsOf(allowedHosts), destination.host))
  }

  /**
   * Takes one of the user's `maxConcurrentTunnels` slots; returns the function that gives it
   * back (once), or a no-op without a limit. With shared limits the slot is taken in the store,
   * and the answer is a promise.
   * @throws ProxyError (or rejects with it) 429 `connection_limit_reached` when the user has
   * that many open; 503 while the store is lost with `onError: 'deny'`.
   */
  reserveTunnel (user: ForwardProxyUser | null): (() => void) | Promise<() => void> {
    const limit = user?.maxConcurrentTunnels
    if (user === null || limit === undefined) return noop
    this.#checkFields(user)
    if (this.#shared === null) return this.#reserveHere(user.name, limit)
    const asked = this.#shared.acquireSlot(user.name, limit)
    if (asked === COUNT_HERE) return this.#reserveHere(user.name, limit)
    return asked.then((slot) => {
      if (slot === COUNT_HERE) return this.#reserveHere(user.name, limit)
      if (slot === null) throw tunnelRefusal(user.name)
      return slot
    })
  }

  #reserveHere (name: string, limit: number): () => void {
    const open = this.#openTunnels.get(name) ?? 0
    if (open >= limit) throw tunnelRefusal(name)
    this.#openTunnels.set(name, open + 1)
    let released = false
    return () => {
      if (released) return
      released = true
      const left = (this.#openTunnels.get(name) ?? 1) - 1
      if (left === 0) this.#openTunnels.delete(name)
      else this.#openTunnels.set(name, left)
    }
  }

  /** Open tunnels of a user counted in this process (without shared limits: all of them). */
  openTunnelsOf (name: string): number {
    return this.#openTunnels.get(name) ?? 0
  }

  #checkFields (user: ForwardProxyUser): void {
    const problem = policyProblem(user as unknown as Record<string, unknown>, null)
    if (problem !== null) {
      throw new ProxyError('proxy_internal_error', 'The proxy\'s user policy is unusable.', { cause: new Error(`user "${user.name}": ${problem.field} ${problem.text}`) })
    }
  }

  #patternsOf (hosts: readonly string[]): HostPattern[] {
    let patterns = this.#hostPatterns.get(hosts)
    if (patterns === undefined) {
      patterns = hosts.map((text) => compileHostPattern(text) as HostPattern)
      this.#hostPatterns.set(hosts, patterns)
    }
    return patterns
  }

  #count (name: string, limit: number): void {
    const now = this.#now()
    let window = this.#windows.get(name)
    if (window === undefined || now - window.start >= WINDOW_MS) {
      if (window === undefined && this.#windows.size >= MAX_IDLE_WINDOWS) this.#dropEndedWindows(now)
      window = { start: now, count: 0 }
      this.#windows.set(name, window)
    }
    if (window.count >= limit) throw rateRefusal(name, window.start + WINDOW_MS - now)
    window.count += 1
  }

  #dropEndedWindows (now: number): void {
    for (const [name, window] of this.#windows) {
      if (now - window.start >= WINDOW_MS) this.#windows.delete(name)
    }
  }
}

function noop (): void {}

function rateRefusal (name: string, msLeft: number): ProxyError {
  return refusedBy(`users.${name}.requestsPerMinute`, new ProxyError('http_request_denied', 'This user has made too many requests; try again later.', { status: 429, details: 'request rate limit of this user reached', retryAfter: retryAfterSeconds(msLeft) }))
}

function tunnelRefusal (name: string): ProxyError {
  return refusedBy(`users.${name}.maxConcurrentTunnels`, new ProxyError('connection_limit_reached', 'This user has reached its limit of open tunnels; close one and try again.', { status: 429, details: 'tunnel limit of this user reached' }))
}

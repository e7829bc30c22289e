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

  /**
   * Waits until `client` may have one more credential check under way, and reserves it: true
   * when the check may run (then call {@link AuthFailureLimiter.settle} exactly once when it has
   * ended), false when the client is locked out. The reservation is taken synchronously, before
   * the returned promise settles, so it counts against the next attempt whatever runs between.
   */
  admit (client: string): Promise<boolean> {
    if (this.isLocked(client)) return Promise.resolve(false)
    let checks = this.#inFlight.get(client)
    if (checks === undefined) {
      checks = { running: 0, waiting: [] }
      this.#inFlight.set(client, checks)
    }
    if (checks.waiting.length === 0 && this.#hasRoom(client, checks)) {
      checks.running += 1
      return Promise.resolve(true)
    }
    const queue = checks.waiting
    return new Promise((resolve) => { queue.push(resolve) })
  }

  /** Ends a check admitted by {@link AuthFailureLimiter.admit}; `failed` counts it as a failure. */
  settle (client: string, failed: boolean): void {
    if (failed) this.recordFailure(client)
    const checks = this.#inFlight.get(client)
    if (checks === undefined) return
    checks.running -= 1
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
    this.#windows.set(client, { endsAt: this.#now() + this.#settings.window, failures: 1 })
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

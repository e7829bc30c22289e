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

/**
 * Counts failed credential checks per client address in fixed windows. Once a client reaches
 * `maxFailures`, every further attempt from it, right or wrong, is refused until its window
 * ends: a guesser learns nothing more, whatever it tries.
 */
export class AuthFailureLimiter {
  readonly #settings: AuthFailureLimitSettings
  readonly #now: () => number
  readonly #windows = new Map<string, FailureWindow>()

  constructor (settings: AuthFailureLimitSettings, now: () => number = Date.now) {
    this.#settings = settings
    this.#now = now
  }

  /** True when `client` has used up its failed attempts for the current window. */
  isLocked (client: string): boolean {
    const window = this.#current(client)
    return window !== undefined && window.failures >= this.#settings.maxFailures
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

  #current (client: string): FailureWindow | undefined {
    const window = this.#windows.get(client)
    if (window === undefined || this.#now() < window.endsAt) return window
    this.#windows.delete(client)
    return undefined
  }
}

// The contract between the limits that may be shared between processes (a user's request rate,
// its open tunnels, the authentication lockout) and the store that counts them for all: the
// first process of a `workers` server, or a Redis.

/**
 * Counts shared limits for every process that uses it. Each call counts atomically in the
 * store; a call the store cannot answer rejects (the caller then counts in its own process).
 * A call that timed out may still have been counted by the store: a request is then counted
 * twice (once there, once by its process), and a slot taken that way is never renewed and comes
 * back when its lease expires.
 * Keys are opaque strings chosen by the caller (a user name, a client address); the store adds
 * its own prefix.
 */
export interface LimitStore {
  /** What the store is, for log lines: `redis://host:port/db` (never with credentials), `the first process`. */
  readonly label: string
  /**
   * Counts one request of `key` in its window: a window starts at the key's first request and
   * lasts `windowMs`. Resolves to 0 when the request is within `limit`, else to the
   * milliseconds until the window ends (the request is refused). Answers 0 at once, without
   * a promise, when the request was counted from places in the window this process took ahead.
   */
  countRequest (key: string, limit: number, windowMs: number): number | Promise<number>
  /**
   * Takes one of `limit` slots of `key` as a lease this process renews while it lives. Resolves
   * to the function that gives it back (call it once), or null when all `limit` are taken. A
   * lease of a process that died is given back when it expires.
   */
  acquireSlot (key: string, limit: number): Promise<(() => void) | null>
  /**
   * Counts one failed authentication of `client` in its window (which starts at its first
   * failure and lasts `windowMs`), and tells every process using the store, this one included,
   * through the listener given to {@link LimitStore.onAuthFailures}. Resolves once counted.
   */
  recordAuthFailure (client: string, windowMs: number): Promise<AuthFailureCount>
  /** Where the failures any process records arrive (one listener; a later call replaces it). */
  onAuthFailures (listener: (client: string, count: AuthFailureCount) => void): void
  /**
   * Where the store reports that it became unreachable (`false`, with why: a message without
   * credentials) or reachable again (`true`).
   */
  onAvailability (listener: (available: boolean, reason?: Error) => void): void
  /** Gives back this process's leases and stops; a store the application passed in is not closed. */
  close (): Promise<void>
}

/** Failed authentications of one client in its current window. */
export interface AuthFailureCount {
  readonly failures: number
  /** Milliseconds until the window ends. */
  readonly msLeft: number
}

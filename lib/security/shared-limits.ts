// Shared limits in front of their store: which calls go to it, what happens when it cannot be
// reached (count in this process, or refuse), and the one log line per transition.

import { ProxyError } from '../protocol/errors'
import { refusedBy } from '../protocol/refusals'
import type { AuthFailureCount, LimitStore } from './limit-store'

/** What the proxy does while its limit store cannot be reached. */
export type LimitStoreFailureMode = 'allow' | 'deny'

/** Where {@link SharedLimits} reports the store's transitions: for log lines and metrics. */
export interface LimitStoreEvents {
  /** The store stopped answering; `error` says why (its message never holds credentials). */
  lost (store: string, error: Error): void
  /** The store answers again. */
  back (store: string): void
}

/** The refusal of a request whose limits cannot be counted, with `onError: 'deny'`. */
const LIMIT_STORE_UNAVAILABLE_DETAILS = 'limit store unavailable'

/** The answer of a {@link SharedLimits} call that this process must count itself. */
export const COUNT_HERE = Symbol('count in this process')

// While the store is lost, one call in this interval still goes to it: the probe that notices
// it is back when the store cannot say so itself (a server that hangs rather than closes).
const PROBE_INTERVAL_MS = 1_000

/**
 * The limits counted for every process through a {@link LimitStore}. Each method resolves to
 * the store's answer, or to {@link COUNT_HERE} when this call must be counted in this process
 * instead (the store is lost and `onError` is `allow`); with `onError: 'deny'` it throws or
 * rejects with a 503 instead.
 * A call the store fails marks it lost until it answers again, so that requests stop waiting
 * on it: while lost, calls are counted in this process without asking it, except one probe a
 * second.
 */
export class SharedLimits {
  readonly #store: LimitStore
  readonly #onError: LimitStoreFailureMode
  readonly #events: LimitStoreEvents
  #lost = false
  #nextProbe = 0

  constructor (store: LimitStore, onError: LimitStoreFailureMode, events: LimitStoreEvents) {
    this.#store = store
    this.#onError = onError
    this.#events = events
    store.onAvailability((available, reason) => {
      if (available) this.#markBack()
      else this.#markLost(reason ?? new Error('the connection to the store was lost'))
    })
  }

  /** The store, for listeners of what other processes record. */
  get store (): LimitStore {
    return this.#store
  }

  /** See {@link LimitStore.countRequest}; {@link COUNT_HERE}: count it in this process. */
  countRequest (key: string, limit: number, windowMs: number): number | Promise<number | typeof COUNT_HERE> | typeof COUNT_HERE {
    if (!this.#shouldAsk()) return this.#fallBack()
    const counted = this.#store.countRequest(key, limit, windowMs)
    // Counted from what this process took ahead: the store was not asked, so says nothing.
    if (typeof counted === 'number') return counted
    return this.#answered(counted)
  }

  /** See {@link LimitStore.acquireSlot}; {@link COUNT_HERE}: count it in this process. */
  acquireSlot (key: string, limit: number): Promise<(() => void) | null | typeof COUNT_HERE> | typeof COUNT_HERE {
    return this.#ask(() => this.#store.acquireSlot(key, limit))
  }

  /** See {@link LimitStore.recordAuthFailure}; null: counted in this process only. */
  recordAuthFailure (client: string, windowMs: number): Promise<AuthFailureCount | null> | null {
    // A failure is counted in this process whatever happens: a store that is down must not
    // make the lockout refuse everyone, so failures never answer 503.
    if (!this.#shouldAsk()) return null
    return this.#store.recordAuthFailure(client, windowMs).then((count) => {
      this.#markBack()
      return count
    }, (error: unknown) => {
      this.#markLost(error)
      return null
    })
  }

  /** Gives back this process's leases and closes the store. */
  async close (): Promise<void> {
    await this.#store.close()
  }

  #ask<T> (call: () => Promise<T>): Promise<T | typeof COUNT_HERE> | typeof COUNT_HERE {
    if (!this.#shouldAsk()) return this.#fallBack()
    return this.#answered(call())
  }

  #answered<T> (answer: Promise<T>): Promise<T | typeof COUNT_HERE> {
    return answer.then((answer) => {
      this.#markBack()
      return answer
    }, (error: unknown) => {
      this.#markLost(error)
      return this.#fallBack()
    })
  }

  #shouldAsk (): boolean {
    if (!this.#lost) return true
    const now = Date.now()
    if (now < this.#nextProbe) return false
    this.#nextProbe = now + PROBE_INTERVAL_MS
    return true
  }

  #fallBack (): typeof COUNT_HERE {
    if (this.#onError === 'deny') {
      throw refusedBy('redis.onError', new ProxyError('proxy_internal_error', 'The proxy cannot count its limits right now; try again later.', { status: 503, details: LIMIT_STORE_UNAVAILABLE_DETAILS }))
    }
    return COUNT_HERE
  }

  #markLost (error: unknown): void {
    if (this.#lost) return
    this.#lost = true
    this.#nextProbe = Date.now() + PROBE_INTERVAL_MS
    this.#events.lost(this.#store.label, error instanceof Error ? error : new Error(String(error)))
  }

  #markBack (): void {
    if (!this.#lost) return
    this.#lost = false
    this.#events.back(this.#store.label)
  }
}

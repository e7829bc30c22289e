// A request rate counted in a store shared by several processes (Redis, or the first process of
// the workers): the requests of one event-loop turn in one call to the store, and places of a
// window taken ahead while plenty are left, so that most requests are admitted without a call.
// The counts stay exact: a place is taken in the store before a request uses it, and a process
// that runs out is given the places others hold unused.

import { RateReserves, type ReturnedUnits } from './rate-reserves'

/**
 * A process takes at most 1/RESERVE_SHARE of what is left of a window ahead of its requests,
 * and at most MOST_UNITS_AHEAD places: far from the limit most requests are counted in the
 * process; near it, where that share is less than one place, every request is counted by the
 * store.
 */
export const RESERVE_SHARE = 16
/** See {@link RESERVE_SHARE}. */
export const MOST_UNITS_AHEAD = 256

/** The places a store gives for `needed` requests when `left` remain in the window. */
export function placesToTake (left: number, needed: number): number {
  if (left <= 0) return 0
  const ahead = Math.max(0, Math.min(MOST_UNITS_AHEAD, Math.floor((left - needed) / RESERVE_SHARE)))
  return Math.min(left, needed + ahead)
}

/** What one key of a batch asks its store for. */
export interface RateTake {
  readonly key: string
  /** The requests of the batch. */
  readonly needed: number
  readonly limit: number
  readonly windowMs: number
  /** Places this process took under another limit, given back before counting. */
  readonly givenBack: ReturnedUnits | null
}

/** The store's answer for one {@link RateTake}. */
export interface RateTaken {
  /** Places taken: the first `needed` go to the requests, the rest to the reserve. */
  readonly taken: number
  /** Milliseconds until the window ends (>= 1). */
  readonly msLeft: number
  /** The window, as the store names it. */
  readonly window: string
  /** When fewer than needed were taken: how many other processes hold places of the window. */
  readonly holders: number
}

/** The store behind a {@link ReservedRateCounter}. */
export interface RateStoreLink {
  /** Takes places for every key of a batch, atomically per key. */
  take (takes: readonly RateTake[]): Promise<readonly RateTaken[]>
  /**
   * Asks the `holders` other processes with places of `key`'s `window` to give back what they
   * did not use; resolves once they did, or after a timeout (a holder that died never answers).
   */
  askForReserves (key: string, window: string, holders: number): Promise<void>
  /** Gives `units` unused places of `key`'s `window` back, and tells process `to` (if any). */
  giveBack (key: string, window: string, units: number, to: string): Promise<unknown>
}

/** A request counted in the current event-loop turn, answered when its batch is. */
interface PendingCount {
  readonly key: string
  readonly limit: number
  readonly windowMs: number
  readonly resolve: (msLeft: number) => void
  readonly reject: (error: Error) => void
}

/**
 * Counts requests of keys in windows shared through a {@link RateStoreLink}:
 * {@link ReservedRateCounter.count} answers 0 at once from places this process took ahead,
 * else queues the request for the turn's call to the store.
 */
export class ReservedRateCounter {
  readonly #link: RateStoreLink
  readonly #reserves: RateReserves
  #pending: PendingCount[] = []

  constructor (link: RateStoreLink, now: () => number = Date.now) {
    this.#link = link
    this.#reserves = new RateReserves(now)
  }

  /**
   * Counts one request of `key`: 0 when admitted, else the milliseconds until its window ends;
   * a number at once when counted from this process's places, else a promise.
   */
  count (key: string, limit: number, windowMs: number): number | Promise<number> {
    if (this.#reserves.use(key, limit)) return 0
    return new Promise((resolve, reject) => {
      if (this.#pending.push({ key, limit, windowMs, resolve, reject }) === 1) {
        setImmediate(() => this.#flush())
      }
    })
  }

  /**
   * Another process ran out: empties this process's places of `key`'s `window` and returns how
   * many it had left (to be given back), or null when it holds none of that window.
   */
  surrender (key: string, window: string): number | null {
    return this.#reserves.surrender(key, window)
  }

  /** Gives back every place this process took ahead and did not use (it stops). */
  giveBackAll (): Array<Promise<unknown>> {
    return this.#reserves.surrenderAll().map(([key, { window, units }]) => this.#link.giveBack(key, window, units, ''))
  }

  #flush (): void {
    // A reply that came in since these were queued may have left places to count them from.
    const pending = this.#pending.filter((count) => {
      if (!this.#reserves.use(count.key, count.limit)) return true
      count.resolve(0)
      return false
    })
    this.#pending = []
    if (pending.length === 0) return
    const byKey = new Map<string, PendingCount[]>()
    for (const count of pending) {
      const same = byKey.get(count.key)
      if (same === undefined) byKey.set(count.key, [count])
      else same.push(count)
    }
    this.#take(byKey, true)
  }

  /**
   * One call to the store for the batch: the requests of a key are admitted in their order
   * while the places taken last. When some are left over and other processes hold places of
   * that window, they are asked for them (once) and the leftover requests counted again; what
   * is still left over is refused.
   */
  #take (byKey: ReadonlyMap<string, readonly PendingCount[]>, mayAskOthers: boolean): void {
    const takes: RateTake[] = []
    for (const [key, counts] of byKey) {
      // Requests counted under different limits in one turn (a reload): the lowest holds for all.
      let limit = (counts[0] as PendingCount).limit
      for (const count of counts) limit = Math.min(limit, count.limit)
      takes.push({ key, needed: counts.length, limit, windowMs: (counts[0] as PendingCount).windowMs, givenBack: this.#reserves.takeUnusable(key, limit) })
    }
    const sentAt = Date.now()
    this.#link.take(takes).then((answers) => {
      for (let i = 0; i < takes.length; i++) {
        const { key, needed, limit } = takes[i] as RateTake
        const { taken, msLeft, window, holders } = answers[i] as RateTaken
        const counts = byKey.get(key) as PendingCount[]
        const admitted = Math.min(taken, needed)
        for (let j = 0; j < admitted; j++) (counts[j] as PendingCount).resolve(0)
        if (taken > needed) this.#reserves.add(key, window, taken - needed, limit, sentAt + msLeft)
        if (admitted === needed) continue
        const leftOver = counts.slice(admitted)
        if (mayAskOthers && holders > 0) {
          this.#link.askForReserves(key, window, holders).then(() => this.#take(new Map([[key, leftOver]]), false), (error: Error) => {
            for (const count of leftOver) count.reject(error)
          })
        } else {
          for (const count of leftOver) count.resolve(msLeft)
        }
      }
    }).catch((error: Error) => {
      for (const counts of byKey.values()) for (const count of counts) count.reject(error)
    })
  }
}

// A process's reserves of users' request rates: units of a shared window taken from the store
// ahead of the requests that will use them, so that most requests are counted without asking
// the store, and exactly: a unit is a place in the window that no other process can have.

/** The units one process holds of one key's window. */
interface Reserve {
  /** The window the units belong to, as the store names it. */
  window: string
  units: number
  /** The limit they were taken under: a request under another limit does not use them. */
  limit: number
  /** This process's clock when the window ends at the latest: no unit is used after it. */
  endsAt: number
}

/** Units of a window that go back to the store. */
export interface ReturnedUnits {
  readonly window: string
  readonly units: number
}

// Reserves of keys that stopped counting are dropped once this many are kept.
const MAX_IDLE_RESERVES = 10_000

/**
 * The reserves of one process, by key. A reserve is used only within its window and under the
 * limit it was taken with; the store gives out reserves only while plenty of a window is left,
 * so near a limit every request is counted by the store itself.
 */
export class RateReserves {
  readonly #reserves = new Map<string, Reserve>()
  readonly #now: () => number

  constructor (now: () => number = Date.now) {
    this.#now = now
  }

  /** Uses one unit of `key`'s reserve taken under `limit`; false when there is none to use. */
  use (key: string, limit: number): boolean {
    const reserve = this.#reserves.get(key)
    if (reserve === undefined || reserve.units === 0 || reserve.limit !== limit || this.#now() >= reserve.endsAt) return false
    reserve.units -= 1
    return true
  }

  /**
   * The units of `key` that requests under `limit` cannot use, because they were taken under
   * another limit (the configuration changed): removed from the reserve, to be given back.
   * Null when there are none.
   */
  takeUnusable (key: string, limit: number): ReturnedUnits | null {
    const reserve = this.#reserves.get(key)
    if (reserve === undefined || reserve.units === 0 || reserve.limit === limit || this.#now() >= reserve.endsAt) return null
    const units = reserve.units
    reserve.units = 0
    return { window: reserve.window, units }
  }

  /**
   * Adds `units` taken ahead in `window` under `limit`, a window that ends no sooner than
   * `endsAt` by this process's clock. Units of an earlier window are dropped (it ended).
   */
  add (key: string, window: string, units: number, limit: number, endsAt: number): void {
    const reserve = this.#reserves.get(key)
    if (reserve !== undefined && reserve.window === window) {
      reserve.units += units
      reserve.limit = limit
      reserve.endsAt = Math.min(reserve.endsAt, endsAt)
      return
    }
    if (reserve === undefined && this.#reserves.size >= MAX_IDLE_RESERVES) this.#dropEnded()
    this.#reserves.set(key, { window, units, limit, endsAt })
  }

  /**
   * Empties `key`'s reserve in `window` for another process that ran out: the units it had
   * left, 0 when it used them all; null when this process holds no reserve of that window.
   */
  surrender (key: string, window: string): number | null {
    const reserve = this.#reserves.get(key)
    if (reserve === undefined || reserve.window !== window) return null
    const units = reserve.units
    reserve.units = 0
    return units
  }

  /** Empties every reserve whose window has not ended, for the store (this process stops). */
  surrenderAll (): Array<[string, ReturnedUnits]> {
    const now = this.#now()
    const returned: Array<[string, ReturnedUnits]> = []
    for (const [key, reserve] of this.#reserves) {
      if (reserve.units > 0 && now < reserve.endsAt) returned.push([key, { window: reserve.window, units: reserve.units }])
    }
    this.#reserves.clear()
    return returned
  }

  #dropEnded (): void {
    const now = this.#now()
    for (const [key, reserve] of this.#reserves) if (now >= reserve.endsAt) this.#reserves.delete(key)
  }
}

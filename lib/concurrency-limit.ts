/**
 * Counts work in progress against a maximum: a slot is reserved before the work starts and given
 * back exactly once, however the work ends.
 */
export class ConcurrencyLimit {
  readonly #max: number
  #reserved = 0

  constructor (max: number) {
    this.#max = max
  }

  /** Slots reserved and not yet given back. */
  get active (): number {
    return this.#reserved
  }

  /** Reserves a slot; returns its release function (idempotent), or null when every slot is taken. */
  tryReserve (): (() => void) | null {
    if (this.#reserved >= this.#max) return null
    this.#reserved++
    let released = false
    return () => {
      if (released) return
      released = true
      this.#reserved--
    }
  }
}

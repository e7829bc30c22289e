/**
 * Runs the credential checks of one HTTP/1.1 connection one after another. Node parses every
 * request a client pipelined in one read and emits them all at once; checked side by side, each
 * would be judged before the failures of those ahead of it counted, and a failure limit of ten
 * would let a burst of pipelined requests try hundreds of passwords.
 */
export class SerialChecks {
  readonly #tails = new WeakMap<object, Promise<void>>()

  /** Runs `check` once every check queued earlier for `connection` has settled. */
  async run<T> (connection: object, check: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(connection)
    let settled: () => void = () => {}
    const mine = new Promise<void>((resolve) => { settled = resolve })
    this.#tails.set(connection, mine)
    try {
      if (previous !== undefined) await previous
      return await check()
    } finally {
      settled()
      if (this.#tails.get(connection) === mine) this.#tails.delete(connection)
    }
  }
}

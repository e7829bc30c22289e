// Tunnels being set up, per client address: a client's new tunnel is set up before more of its
// requests on its other intercepted tunnels are answered.
//
// Why: Go's HTTP Transport (before Go 1.23, and hey among its users) dials a spare connection
// whenever a request finds no idle one, and with a client timeout it cancels that dial as soon as
// the request that asked for it completes on a connection freed meanwhile. Through a proxy such
// a dial is a CONNECT and a TLS handshake, several turns of the proxy's event loop, while a
// request on an open tunnel takes two. Under load the dials never finish: the client keeps a
// share of its workers waiting and opens thousands of tunnels it abandons (the "spare-dial
// storm", which halved the proxy's throughput). Holding the client's requests on its open
// intercepted tunnels while one of its tunnels is being set up, for a few milliseconds at most
// (`limits.tunnelSetupWait`), lets the dial finish first, and the storm never starts or dies out.

import type { Socket } from 'node:net'

/** One client address with tunnels being set up. */
interface AddressSetups {
  count: number
  /** Releases the requests waiting for the count to fall to 0. */
  waiting: Array<() => void>
}

/**
 * HTTP/1.1 tunnels being set up (from their CONNECT until they are answered, or for an
 * intercepted one until the client's TLS handshake is done), counted per client address, and
 * what a request from that address waits for.
 */
export class TunnelSetups {
  readonly #byAddress = new Map<string, AddressSetups>()
  /** The address each socket being set up counts under. */
  readonly #pending = new WeakMap<Socket, string>()

  /** Counts `socket`'s tunnel as being set up, until {@link end} or until the socket closes. */
  begin (socket: Socket): void {
    const address = socket.remoteAddress
    if (address === undefined || this.#pending.has(socket)) return
    this.#pending.set(socket, address)
    let setups = this.#byAddress.get(address)
    if (setups === undefined) {
      setups = { count: 0, waiting: [] }
      this.#byAddress.set(address, setups)
    }
    setups.count++
    socket.once('close', () => this.end(socket))
  }

  /** The tunnel on `socket` is set up (or failed): it no longer holds its client's requests. Idempotent. */
  end (socket: Socket): void {
    const address = this.#pending.get(socket)
    if (address === undefined) return
    this.#pending.delete(socket)
    const setups = this.#byAddress.get(address)
    if (setups === undefined) return
    setups.count--
    if (setups.count === 0) this.#release(address, setups)
  }

  /**
   * Null when no tunnel of the client at `address` is being set up (the request goes on at once)
   * or `maxWaitMs` is 0, else a promise that resolves when none is any more, or after `maxWaitMs`.
   */
  waitFor (address: string | undefined, maxWaitMs: number): Promise<void> | null {
    if (address === undefined || maxWaitMs === 0) return null
    const setups = this.#byAddress.get(address)
    if (setups === undefined) return null
    return new Promise((resolve) => {
      const release = (): void => {
        clearTimeout(timer)
        resolve()
      }
      const timer = setTimeout(() => {
        // Waited long enough: released alone, and forgotten so a stalled set-up keeps nothing.
        setups.waiting.splice(setups.waiting.indexOf(release), 1)
        resolve()
      }, maxWaitMs)
      timer.unref()
      setups.waiting.push(release)
    })
  }

  /** How many tunnels of the client at `address` are being set up. */
  pendingFor (address: string): number {
    return this.#byAddress.get(address)?.count ?? 0
  }

  #release (address: string, setups: AddressSetups): void {
    this.#byAddress.delete(address)
    for (const release of setups.waiting) release()
  }
}

/** The process's tunnels being set up: one event loop, whichever registration or listener they came on. */
export const tunnelSetups = new TunnelSetups()

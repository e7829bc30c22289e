// Tunnels being set up, per client address and destination: a client's new tunnel to a host is
// set up before more of its requests on its other intercepted tunnels to that host are answered.
//
// Why: Go's HTTP Transport (before Go 1.23, and hey among its users) dials a spare connection
// whenever a request finds no idle one, and with a client timeout it cancels that dial as soon as
// the request that asked for it completes on a connection freed meanwhile. Through a proxy such
// a dial is a CONNECT and a TLS handshake, several turns of the proxy's event loop, while a
// request on an open tunnel takes two. Under load the dials never finish: the client keeps a
// share of its workers waiting and opens thousands of tunnels it abandons (the "spare-dial
// storm", which halves the proxy's throughput). Holding the client's requests on its open
// intercepted tunnels to the same destination (the same pool of the client's connections)
// while a new tunnel there is being set up, for a bounded time (`limits.tunnelSetupWait`),
// lets the dial finish first, and the storm never starts or dies out. Requests to other hosts
// never wait for it.

import type { Socket } from 'node:net'
import type { ForwardProxyDestination } from '../../types/destination'

/** One client address and destination with tunnels being set up. */
interface PendingSetups {
  count: number
  /** Releases the requests waiting for the count to fall to 0. */
  waiting: Array<() => void>
}

/** The key of a client address and a destination; a space cannot occur in either. */
function setupKey (address: string, destination: ForwardProxyDestination): string {
  return `${address} ${destination.host} ${destination.port}`
}

/**
 * HTTP/1.1 tunnels being set up (from their CONNECT until they are answered, or for an
 * intercepted one until the client's TLS handshake is done), counted per client address and
 * destination, and what a request from that address to that destination waits for.
 */
export class TunnelSetups {
  readonly #byKey = new Map<string, PendingSetups>()
  /** The key each socket being set up counts under. */
  readonly #pending = new WeakMap<Socket, string>()

  /** Counts `socket`'s tunnel to `destination` as being set up, until {@link end} or until the socket closes. */
  begin (socket: Socket, destination: ForwardProxyDestination): void {
    const address = socket.remoteAddress
    if (address === undefined || this.#pending.has(socket)) return
    const key = setupKey(address, destination)
    this.#pending.set(socket, key)
    let setups = this.#byKey.get(key)
    if (setups === undefined) {
      setups = { count: 0, waiting: [] }
      this.#byKey.set(key, setups)
    }
    setups.count++
    socket.once('close', () => this.end(socket))
  }

  /** The tunnel on `socket` is set up (or failed): it no longer holds its client's requests. Idempotent. */
  end (socket: Socket): void {
    const key = this.#pending.get(socket)
    if (key === undefined) return
    this.#pending.delete(socket)
    const setups = this.#byKey.get(key)
    if (setups === undefined) return
    setups.count--
    if (setups.count === 0) this.#release(key, setups)
  }

  /**
   * Null when no tunnel of the client at `address` to `destination` is being set up (the
   * request goes on at once) or `maxWaitMs` is 0, else a promise that resolves when none is
   * any more, or after `maxWaitMs`.
   */
  waitFor (address: string | undefined, destination: ForwardProxyDestination, maxWaitMs: number): Promise<void> | null {
    // Nothing being set up anywhere, the usual case: no key built.
    if (this.#byKey.size === 0 || address === undefined || maxWaitMs === 0) return null
    const setups = this.#byKey.get(setupKey(address, destination))
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

  /** How many tunnels of the client at `address` to `destination` are being set up. */
  pendingFor (address: string, destination: ForwardProxyDestination): number {
    return this.#byKey.get(setupKey(address, destination))?.count ?? 0
  }

  #release (key: string, setups: PendingSetups): void {
    this.#byKey.delete(key)
    for (const release of setups.waiting) release()
  }
}

/** The process's tunnels being set up: one event loop, whichever registration or listener they came on. */
export const tunnelSetups = new TunnelSetups()

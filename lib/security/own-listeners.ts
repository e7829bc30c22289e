import { isIP, type AddressInfo } from 'node:net'
import { networkInterfaces } from 'node:os'

/** Anything with `address()` like a listening Node server. */
export interface Listening {
  address (): AddressInfo | string | null
}

/**
 * The proxy's own listening sockets, to refuse a destination that is the proxy itself (a CONNECT
 * or request to its own port would loop through it, each round taking another tunnel slot).
 * Judged on the address about to be dialed, so a name resolving to the proxy is caught too.
 */
export class OwnListeners {
  readonly #servers = new Set<Listening>()

  /** Tracks `server`; its address is read on every check, so it may start listening later. */
  add (server: Listening): void {
    this.#servers.add(server)
  }

  /** True when dialing `address`:`port` would reach one of the tracked listeners. */
  includes (address: string, port: number): boolean {
    const dialed = unmapped(address)
    for (const server of this.#servers) {
      const bound = server.address()
      if (bound === null || typeof bound === 'string' || bound.port !== port) continue
      const listening = unmapped(bound.address)
      if (listening === dialed) return true
      if (isUnspecified(listening) && isLocal(dialed)) return true
    }
    return false
  }
}

function unmapped (address: string): string {
  const lower = address.toLowerCase()
  return lower.startsWith('::ffff:') && isIP(lower.slice(7)) === 4 ? lower.slice(7) : lower
}

function isUnspecified (address: string): boolean {
  return address === '0.0.0.0' || address === '::'
}

// An unspecified listener ('0.0.0.0', '::') answers on every local address: loopback and the
// addresses of this host's interfaces.
function isLocal (address: string): boolean {
  if (address === '::1' || address === '0.0.0.0' || address === '::' || /^127\./.test(address)) return true
  return Object.values(networkInterfaces()).some((entries) => entries?.some((entry) => unmapped(entry.address) === address) === true)
}

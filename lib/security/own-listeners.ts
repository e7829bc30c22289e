import type { AddressInfo } from 'node:net'
import { networkInterfaces } from 'node:os'
import { dialedAddressBytes, sameBytes } from './ip-address'

/** Anything with `address()` like a listening Node server. */
export interface Listening {
  address (): AddressInfo | string | null
}

interface TrackedListener {
  readonly server: Listening
  cached: AddressInfo | string | null
  cacheable: boolean
}

function addressOf (tracked: TrackedListener): AddressInfo | string | null {
  if (tracked.cached !== null) return tracked.cached
  const bound = tracked.server.address()
  if (tracked.cacheable) tracked.cached = bound
  return bound
}

/**
 * The proxy's own listening sockets, to refuse a destination that is the proxy itself (a CONNECT
 * or request to its own port would loop through it, each round taking another tunnel slot).
 * Judged on the address about to be dialed, so a name resolving to the proxy is caught too, and
 * addresses are compared as addresses, not spellings: `::ffff:127.0.0.1`, `::ffff:7f00:1` and
 * `127.0.0.1` are one address, and an unspecified address (`0.0.0.0`, `::`), which the kernel
 * dials as this host, reaches every listener on its port.
 */
export class OwnListeners {
  readonly #servers = new Set<TrackedListener>()

  /**
   * Tracks `server`; it may start listening later. The address of a server that emits
   * `'listening'` and `'close'` is read once per listen (it costs a system call); any other's is
   * read on every check.
   */
  add (server: Listening): void {
    const tracked: TrackedListener = { server, cached: null, cacheable: false }
    const emitter = server as Partial<Pick<NodeJS.EventEmitter, 'on'>>
    if (typeof emitter.on === 'function') {
      tracked.cacheable = true
      const forget = (): void => { tracked.cached = null }
      emitter.on.call(server, 'listening', forget)
      emitter.on.call(server, 'close', forget)
    }
    this.#servers.add(tracked)
  }

  /** True when dialing `address`:`port` would reach one of the tracked listeners. */
  includes (address: string, port: number): boolean {
    const dialed = dialedAddressBytes(address)
    if (dialed === null) return false
    for (const tracked of this.#servers) {
      const bound = addressOf(tracked)
      if (bound === null || typeof bound === 'string' || bound.port !== port) continue
      if (isUnspecified(dialed)) return true
      const listening = dialedAddressBytes(bound.address)
      if (listening === null) continue
      if (sameBytes(listening, dialed)) return true
      if (isUnspecified(listening) && isLocal(dialed)) return true
    }
    return false
  }
}

function isUnspecified (bytes: Uint8Array): boolean {
  return bytes.every((byte) => byte === 0)
}

// An unspecified listener ('0.0.0.0', '::') answers on every local address: loopback and the
// addresses of this host's interfaces.
function isLocal (dialed: Uint8Array): boolean {
  if (dialed.length === 4 && dialed[0] === 127) return true
  if (dialed.length === 16 && dialed[15] === 1 && dialed.subarray(0, 15).every((byte) => byte === 0)) return true
  return Object.values(networkInterfaces()).some((entries) => entries?.some((entry) => {
    const own = dialedAddressBytes(entry.address)
    return own !== null && sameBytes(own, dialed)
  }) === true)
}

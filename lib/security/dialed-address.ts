// The address and port each destination connection was dialed to, for the access log
// (`127.0.0.1:8443`, `[::1]:443`): remembered when the connector dials, formatted only when a
// log line asks.

import { formatAuthority } from '../protocol/hosts'

/** Where a connection was dialed: the checked IP address and the port. */
export interface DialedAddress {
  readonly host: string
  readonly port: number
}

/** How long a connection took to open, in milliseconds. */
export interface DialDurations {
  /** DNS resolution and the TCP connection (or the CONNECT through an upstream proxy). */
  readonly connect: number
  /** The TLS handshake; -1 without TLS. */
  readonly ssl: number
  /** `performance.now()` when it was open: a request sent before then waited for the dial. */
  readonly openedAt: number
}

// Kept off the sockets themselves; the entry goes with the socket. `text` is the formatted
// address, made by the first log line that asks (a pooled connection serves many requests).
// An entry holds its own copy of the host and port, never the caller's object: what the dial was
// given (its onread reader, and through it the tunnel's relay) would otherwise live as long as the
// socket, and whatever holds a closed socket would hold the tunnel (see relay.ts, letGoOfSocket).
const dialedAddresses = new WeakMap<object, { readonly host: string, readonly port: number, text?: string }>()

const dialDurations = new WeakMap<object, DialDurations>()

/**
 * Remembers that `socket` was dialed to `target` (an address the policy allowed), as given: no
 * string is built until {@link dialedAddressOf} is called.
 */
export function rememberDialedAddress (socket: object, target: DialedAddress): void {
  dialedAddresses.set(socket, { host: target.host, port: target.port })
}

/** Gives `outer` (a TLS socket layered on `inner`) the address `inner` was dialed to, if any. */
export function carryDialedAddress (outer: object, inner: object): void {
  const dialed = dialedAddresses.get(inner)
  if (dialed !== undefined) dialedAddresses.set(outer, dialed)
}

/**
 * The address and port `socket` was dialed to (`127.0.0.1:8443`, `[::1]:443`), or undefined for
 * none given, or a socket the connector did not dial to a destination itself (one through an
 * upstream proxy, which resolves the name).
 */
export function dialedAddressOf (socket: object | undefined): string | undefined {
  const dialed = socket === undefined ? undefined : dialedAddresses.get(socket)
  if (dialed === undefined) return undefined
  dialed.text ??= formatAuthority(dialed.host, dialed.port)
  return dialed.text
}

/** The IP address `socket` was dialed to, without its port (undefined as for {@link dialedAddressOf}). */
export function dialedHostOf (socket: object | undefined): string | undefined {
  return socket === undefined ? undefined : dialedAddresses.get(socket)?.host
}

/** Notes how long `socket` took to open, for the first request sent on it. */
export function noteDialDurations (socket: object, durations: DialDurations): void {
  dialDurations.set(socket, durations)
}

/** How long `socket` took to open, when it was noted. */
export function dialDurationsOf (socket: object | undefined): DialDurations | undefined {
  return socket === undefined ? undefined : dialDurations.get(socket)
}

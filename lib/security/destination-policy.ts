// The destination policy: which hosts, ports and addresses a request or tunnel may reach,
// special-purpose ranges, and the proxy's own listeners.

import type { AddressInfo } from 'node:net'
import { networkInterfaces } from 'node:os'
import { lookup } from 'node:dns/promises'
import type { ForwardProxyDestination } from '../../types/destination'
import { ForwardProxyRuleError, ProxyError } from '../protocol/errors'
import { policyRefusal, refusedBy } from '../protocol/refusals'
import {
  cidrContains,
  type Cidr,
  parseIP,
  matchesAny,
  type HostPattern,
  parseCidr,
  dialedAddressBytes,
  sameBytes
} from '../protocol/hosts'
import type { ForwardProxyResolver, ResolvedAddress } from '../../types/options'
import type { ReportedRefusal } from './report-mode'

// Most distinct address texts remembered; past it the cache starts over.
const VERDICT_CACHE_SIZE = 1024

/** The validated, compiled form of the destination options. */
export interface DestinationPolicySettings {
  readonly allowedHosts: readonly HostPattern[]
  readonly deniedHosts: readonly HostPattern[]
  /** null means every port. */
  readonly allowedPorts: ReadonlySet<number> | null
  readonly allowPrivateNetworks: boolean
  readonly allowedNetworks: readonly Cidr[]
  /** `mode: 'report'`: the host lists log what they would refuse instead of refusing it. */
  readonly reportHosts: boolean
}

const HOST_NOT_ALLOWED = 'host not allowed'

// What report mode logs for each host list; shared, so a reported request allocates nothing.
const REPORTED_DENIED_HOST: ReportedRefusal = { rule: 'destinations.deniedHosts', reason: HOST_NOT_ALLOWED }
const REPORTED_NOT_ALLOWED_HOST: ReportedRefusal = { rule: 'destinations.allowedHosts', reason: HOST_NOT_ALLOWED }

/**
 * Decides which destinations may be reached (by default ports 80 and 443, public addresses only). Names and ports are checked
 * when a request arrives; addresses are checked on every connect, after DNS, and only the
 * addresses that pass are dialed, so DNS rebinding cannot slip through.
 */
export class DestinationPolicy {
  readonly #settings: DestinationPolicySettings
  // Verdicts by address text (null: not an IP literal). The settings never change, and the
  // same few destinations come back on every request and connect.
  readonly #verdicts = new Map<string, boolean | null>()

  constructor (settings: DestinationPolicySettings) {
    this.#settings = settings
  }

  /**
   * Checks the name and port of a destination. Throws a 403 `http_request_denied` ProxyError
   * when the host is denied or not allowed, or the port is not allowed; a 403
   * `destination_ip_prohibited` when the host is an IP literal in a refused range. In report
   * mode a host the lists would refuse is not thrown for: the refusal is returned (the port and
   * address are still checked). Returns null when nothing was reported.
   */
  checkDestination (destination: ForwardProxyDestination): ReportedRefusal | null {
    const { allowedHosts, deniedHosts, allowedPorts, reportHosts } = this.#settings
    let reported: ReportedRefusal | null = null
    const denied = matchesAny(deniedHosts, destination.host)
    if (denied || !matchesAny(allowedHosts, destination.host)) {
      if (reportHosts) reported = denied ? REPORTED_DENIED_HOST : REPORTED_NOT_ALLOWED_HOST
      else {
        const error = new ProxyError('http_request_denied', 'Destination host is not allowed by the proxy policy.', { details: HOST_NOT_ALLOWED })
        throw policyRefusal('host', refusedBy(denied ? 'destinations.deniedHosts' : 'destinations.allowedHosts', error))
      }
    }
    if (allowedPorts !== null && !allowedPorts.has(destination.port)) {
      const error = new ProxyError('http_request_denied', 'Destination port is not allowed by the proxy policy.', { details: 'port not allowed' })
      throw policyRefusal('port', refusedBy('destinations.allowedPorts', error))
    }
    if (this.#verdictOf(destination.host) === false) this.#refuseAddress(destination.host)
    return reported
  }

  /** True when a resolved address may be dialed. */
  isAddressAllowed (address: string): boolean {
    return this.#verdictOf(address) === true
  }

  /** Throws a 403 `destination_ip_prohibited` ProxyError when `address` may not be dialed. */
  checkAddress (address: string): void {
    if (!this.isAddressAllowed(address)) this.#refuseAddress(address)
  }

  #refuseAddress (address: string): never {
    const category = classifyAddress(address) ?? 'not allowed'
    throw new ProxyError('destination_ip_prohibited', 'Destination address is not allowed by the proxy policy.', { details: `${category} address` })
  }

  #verdictOf (address: string): boolean | null {
    const known = this.#verdicts.get(address)
    if (known !== undefined) return known
    const bytes = parseIP(address)
    const verdict = bytes === null ? null : this.#judge(bytes, dialedAddressBytes(address) ?? bytes)
    if (this.#verdicts.size >= VERDICT_CACHE_SIZE) this.#verdicts.clear()
    this.#verdicts.set(address, verdict)
    return verdict
  }

  // `dialed` is `bytes` with an IPv4-mapped address as the IPv4 address it maps: the socket
  // reaches that IPv4 address, so an IPv4 range in `allowedNetworks` allows it in either spelling.
  #judge (bytes: Uint8Array, dialed: Uint8Array): boolean {
    if (this.#settings.allowedNetworks.some((range) => cidrContains(range, bytes) || cidrContains(range, dialed))) return true
    if (this.#settings.allowPrivateNetworks) return true
    return classifyAddress(bytes) === null
  }
}

/** Why an address is not a public unicast destination. */
export type AddressCategory =
  | 'unspecified' | 'loopback' | 'private' | 'link-local' | 'shared (CGNAT)' | 'multicast'
  | 'reserved' | 'documentation' | 'benchmarking' | 'unique-local' | 'site-local'
  | 'IETF protocol assignment' | 'discard-only' | 'broadcast'

interface NamedRange { readonly range: Cidr, readonly category: AddressCategory }

function ranges (entries: ReadonlyArray<readonly [string, AddressCategory]>): NamedRange[] {
  return entries.map(([text, category]) => {
    const range = parseCidr(text)
    if (range === null) throw new ForwardProxyRuleError(`bad built-in range ${text}`)
    return { range, category }
  })
}

// IANA IPv4 and IPv6 Special-Purpose Address Registries, plus multicast and reserved space.
const IPV4_RANGES = ranges([
  ['0.0.0.0/8', 'unspecified'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'shared (CGNAT)'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'IETF protocol assignment'],
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', 'reserved'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
  ['255.255.255.255/32', 'broadcast']
])

const IPV6_RANGES = ranges([
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['100::/64', 'discard-only'],
  ['64:ff9b:1::/48', 'private'],
  ['2001::/23', 'IETF protocol assignment'],
  ['2001:db8::/32', 'documentation'],
  ['3fff::/20', 'documentation'],
  ['5f00::/16', 'reserved'],
  ['fc00::/7', 'unique-local'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'site-local'],
  ['ff00::/8', 'multicast']
])

/** IPv6 prefixes that carry an IPv4 address, and where it sits. */
const EMBEDDED_IPV4 = [
  { range: parseCidr('::ffff:0:0/96'), offset: 12 }, // IPv4-mapped
  { range: parseCidr('::ffff:0:0:0/96'), offset: 12 }, // IPv4-translated (SIIT)
  { range: parseCidr('::/96'), offset: 12 }, // IPv4-compatible (deprecated)
  { range: parseCidr('64:ff9b::/96'), offset: 12 }, // NAT64 well-known prefix
  { range: parseCidr('2002::/16'), offset: 2 } // 6to4
]

/**
 * The IPv4 address an IPv6 address carries (IPv4-mapped, IPv4-compatible, NAT64, 6to4), or null.
 */
function embeddedIPv4 (bytes: Uint8Array): Uint8Array | null {
  if (bytes.length !== 16) return null
  for (const { range, offset } of EMBEDDED_IPV4) {
    if (range !== null && cidrContains(range, bytes)) return bytes.slice(offset, offset + 4)
  }
  return null
}

/**
 * Classifies an address (text or bytes). Returns why it is special-purpose, or null for a
 * public unicast address. IPv6 forms that embed an IPv4 address are judged by that address too.
 */
export function classifyAddress (address: string | Uint8Array): AddressCategory | null {
  const bytes = typeof address === 'string' ? parseIP(address) : address
  if (bytes === null) return 'reserved'
  if (bytes.length === 4) return firstMatch(IPV4_RANGES, bytes)
  const own = firstMatch(IPV6_RANGES, bytes)
  if (own !== null) return own
  const v4 = embeddedIPv4(bytes)
  return v4 === null ? null : firstMatch(IPV4_RANGES, v4)
}

function firstMatch (list: readonly NamedRange[], bytes: Uint8Array): AddressCategory | null {
  for (const { range, category } of list) {
    if (cidrContains(range, bytes)) return category
  }
  return null
}

/** Anything with `address()` like a listening Node server. */
export interface Listening {
  address (): AddressInfo | string | null
}

interface TrackedListener {
  readonly server: Listening
  /** The bound port and address bytes, kept while `cacheable` until the server listens again or closes. */
  cached: BoundListener | null
  cacheable: boolean
}

/** Where a tracked server listens: its port and its address as dialed bytes (null when unparseable). */
interface BoundListener {
  readonly port: number
  readonly bytes: Uint8Array | null
}

function boundOf (tracked: TrackedListener): BoundListener | null {
  if (tracked.cached !== null) return tracked.cached
  const address = tracked.server.address()
  if (address === null || typeof address === 'string') return null
  const bound = { port: address.port, bytes: dialedAddressBytes(address.address) }
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
    // The address is parsed only when a listener is on that port: most dials are to other ports.
    let dialed: Uint8Array | null | undefined
    for (const tracked of this.#servers) {
      const bound = boundOf(tracked)
      if (bound === null || bound.port !== port) continue
      dialed ??= dialedAddressBytes(address)
      if (dialed === null) return false
      if (isUnspecified(dialed)) return true
      const listening = bound.bytes
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

/** Resolves with the system resolver (`dns.lookup`, all addresses, in the order it returns). */
export const systemResolver: ForwardProxyResolver = async (hostname) => {
  const answers = await lookup(hostname, { all: true, verbatim: true })
  return answers.map(({ address, family }): ResolvedAddress => ({ address, family: family === 6 ? 6 : 4 }))
}

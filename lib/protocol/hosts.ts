// Host names and addresses: canonical hosts, IP literals, CIDR ranges, host patterns, and whether a
// Host header names a destination.

import { isIPv6, isIPv4 } from 'node:net'
import type { ForwardProxyDestination } from '../../types/destination'
import { ForwardProxyRuleError } from './errors'

/**
 * Compiles host patterns given by an operator (`example.com`, `*.example.com`, `*`, IP
 * literals), naming the first unusable one.
 * @throws ForwardProxyRuleError for a pattern that can match nothing valid.
 */
export function compileHostPatterns (patterns: readonly string[], option: string): HostPattern[] {
  if (!Array.isArray(patterns)) throw new ForwardProxyRuleError(`${option} must be an array of host patterns`)
  return patterns.map((text, index) => {
    const pattern = typeof text === 'string' ? compileHostPattern(text) : null
    if (pattern === null) throw new ForwardProxyRuleError(`${option}[${index}] is not a host pattern (example.com, *.example.com, *, an IP literal or a CIDR range)`)
    return pattern
  })
}

// RFC 3986 reg-name characters we accept in a request target, minus percent-encoding and
// sub-delims: a host name is letters, digits, '-', '.', '_' and '~'.
const REG_NAME = /^[A-Za-z0-9._~-]+$/

/**
 * Canonicalizes the host of a request target the way a browser would resolve it: lower case,
 * IDNA (punycode), alternate IPv4 spellings (`127.1`, `0x7f000001`, `2130706433`, `0177.0.0.1`)
 * turned into dotted quads, IPv6 compressed and unbracketed, one trailing dot removed.
 * Returns null when the text is not a usable host: empty, percent-encoded, with userinfo or
 * other characters a host cannot hold, or a name longer than DNS allows (253 characters, labels
 * of 63). Policy is always applied to this canonical form.
 */
export function canonicalHost (rawHost: string): string | null {
  return canonicalHosts(rawHost)
}

/**
 * `compute`, remembered per text. Clients name few hosts over and over; a client that sprays
 * names only empties the memo, which is cleared whole once it holds {@link HOSTS_REMEMBERED}.
 */
function rememberedPerHost<T> (compute: (text: string) => T): (text: string) => T {
  const known = new Map<string, T>()
  return (text) => {
    const remembered = known.get(text)
    if (remembered !== undefined) return remembered
    const value = compute(text)
    if (known.size >= HOSTS_REMEMBERED) known.clear()
    known.set(text, value)
    return value
  }
}

const HOSTS_REMEMBERED = 1024

/** The longest DNS name, without its trailing dot, and the longest label in it. */
const MAX_NAME_LENGTH = 253
const MAX_LABEL_LENGTH = 63

// Canonicalizing a host parses a URL: about a microsecond per request, for the same few hosts.
const canonicalHosts = rememberedPerHost(canonicalizeHost)

function canonicalizeHost (rawHost: string): string | null {
  if (rawHost.startsWith('[') && rawHost.endsWith(']')) {
    const literal = rawHost.slice(1, -1)
    // Zone identifiers (fe80::1%eth0) name a local interface: never a destination.
    if (literal.includes('%') || !isIPv6(literal)) return null
    return bracketless(new URL(`http://[${literal}]/`).hostname)
  }
  if (!REG_NAME.test(rawHost)) return null
  let hostname: string
  try {
    hostname = new URL(`http://${rawHost}/`).hostname
  } catch {
    return null
  }
  if (hostname.endsWith('.')) hostname = hostname.slice(0, -1)
  const labels = hostname.split('.')
  if (labels.includes('')) return null
  // RFC 1035's limits: a name no resolver can look up is a malformed target, not a failed dial.
  if (hostname.length > MAX_NAME_LENGTH || labels.some((label) => label.length > MAX_LABEL_LENGTH)) return null
  return bracketless(hostname)
}

/** Canonicalizes a host pattern or host name given in configuration (non-ASCII allowed there). */
function canonicalConfiguredHost (text: string): string | null {
  const trimmed = text.trim()
  if (isIPv6(trimmed)) return canonicalHost(`[${trimmed}]`)
  try {
    const ascii = new URL(`http://${trimmed}/`).hostname
    return canonicalHost(ascii)
  } catch {
    return null
  }
}

function bracketless (hostname: string): string {
  return hostname.startsWith('[') ? hostname.slice(1, -1) : hostname
}

/** Formats a host for an authority (`[v6]:port` or `name:port`). */
export function formatAuthority (host: string, port: number): string {
  return isIPv6Host(host) ? `[${host}]:${port}` : `${host}:${port}`
}

/** Formats a `Host` header value: the authority, without the port when it is the scheme's default. */
export function formatHostHeader (host: string, port: number, defaultPort: number): string {
  if (port !== defaultPort) return formatAuthority(host, port)
  return isIPv6Host(host) ? `[${host}]` : host
}

// A host name or IPv4 address never holds a colon: cheaper than Node's isIPv6 regular expression.
function isIPv6Host (host: string): boolean {
  return host.includes(':') && !host.startsWith('[')
}

/** Parses a dotted-quad IPv4 address into its 4 bytes, or null. Only canonical spellings. */
export function parseIPv4 (text: string): Uint8Array | null {
  if (!isIPv4(text)) return null
  return Uint8Array.from(text.split('.').map(Number))
}

/**
 * Parses an IPv6 address (with `::` compression, an optional dotted IPv4 tail and an optional
 * `%zone`, which is ignored) into its 16 bytes, or null.
 */
export function parseIPv6 (text: string): Uint8Array | null {
  const address = text.split('%', 1)[0] ?? ''
  if (!isIPv6(address)) return null
  let head = address
  const tail: number[] = []
  const lastColon = head.lastIndexOf(':')
  const last = head.slice(lastColon + 1)
  if (last.includes('.')) {
    const v4 = parseIPv4(last)
    if (v4 === null) return null
    head = head.slice(0, lastColon + 1) + '0:0'
    tail.push(...v4)
  }
  const [left = '', right] = head.split('::')
  const leftGroups = left === '' ? [] : left.split(':')
  const rightGroups = right === undefined || right === '' ? [] : right.split(':')
  const missing = 8 - leftGroups.length - rightGroups.length
  const groups = right === undefined ? leftGroups : [...leftGroups, ...new Array<string>(missing).fill('0'), ...rightGroups]
  if (groups.length !== 8) return null
  const bytes = new Uint8Array(16)
  groups.forEach((group, index) => {
    const value = parseInt(group, 16)
    bytes[index * 2] = value >> 8
    bytes[index * 2 + 1] = value & 0xff
  })
  if (tail.length === 4) bytes.set(tail, 12)
  return bytes
}

/** Parses an IPv4 or IPv6 address into 4 or 16 bytes, or null when `text` is neither. */
export function parseIP (text: string): Uint8Array | null {
  return parseIPv4(text) ?? parseIPv6(text)
}

/** True when the first `prefixLength` bits of `address` and `network` agree. */
function matchesPrefix (address: Uint8Array, network: Uint8Array, prefixLength: number): boolean {
  if (address.length !== network.length) return false
  const wholeBytes = prefixLength >> 3
  for (let i = 0; i < wholeBytes; i++) {
    if (address[i] !== network[i]) return false
  }
  const remainingBits = prefixLength & 7
  if (remainingBits === 0) return true
  const mask = (0xff << (8 - remainingBits)) & 0xff
  return ((address[wholeBytes] ?? 0) & mask) === ((network[wholeBytes] ?? 0) & mask)
}

/**
 * The bytes of `text` as the address the kernel dials: an IPv4-mapped IPv6 address
 * (`::ffff:127.0.0.1`, `::ffff:7f00:1`) as the 4 bytes of the IPv4 address it maps to, others as
 * parsed. Null when `text` is not an IP address. Two spellings of one address give equal bytes.
 * The bytes are shared between calls with the same text: read them, never write them.
 */
export function dialedAddressBytes (text: string): Uint8Array | null {
  return dialedAddresses(text)
}

// Every IP-literal or CIDR host pattern (interception hosts, header rules, host lists) parses the
// host it is matched against: a few microseconds per pattern and request, for the same few hosts.
const dialedAddresses = rememberedPerHost(parseDialedAddress)

function parseDialedAddress (text: string): Uint8Array | null {
  const bytes = parseIP(text)
  if (bytes === null || bytes.length === 4) return bytes
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return bytes
  return bytes[10] === 0xff && bytes[11] === 0xff ? bytes.slice(12) : bytes
}

/** True when `a` and `b` hold the same bytes. */
export function sameBytes (a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, index) => byte === b[index])
}

/** A parsed CIDR range such as `10.0.0.0/8` or `fd00::/8`. */
export interface Cidr {
  readonly text: string
  readonly network: Uint8Array
  readonly prefixLength: number
}

/**
 * Parses `address/prefix` (or a bare address, meaning a single host). Returns null when the
 * text is not a valid range; callers turn that into an option error naming the value.
 */
export function parseCidr (text: string): Cidr | null {
  const [address = '', prefix, extra] = text.split('/')
  if (extra !== undefined) return null
  const network = parseIP(address)
  if (network === null) return null
  const maxLength = network.length * 8
  if (prefix !== undefined && !/^\d{1,3}$/.test(prefix)) return null
  const prefixLength = prefix === undefined ? maxLength : Number(prefix)
  if (prefixLength > maxLength) return null
  return { text, network, prefixLength }
}

/** True when `address` (4 or 16 bytes) lies inside `range`. */
export function cidrContains (range: Cidr, address: Uint8Array): boolean {
  return matchesPrefix(address, range.network, range.prefixLength)
}

/** A compiled host pattern: `*`, `*.example.com`, `example.com`, an IP literal or a CIDR range. */
export interface HostPattern {
  readonly text: string
  matches (host: string): boolean
}

/**
 * Compiles a host pattern from configuration. `*.example.com` matches every name under
 * example.com (any depth) but not example.com itself. Names are canonicalized (lower case,
 * punycode, no trailing dot) so the pattern and the target are compared in the same form.
 * An IP literal or a CIDR range (`10.0.0.0/8`, `fd00::/8`) matches IP-literal targets by
 * address, not spelling: `127.0.0.1` also matches `[::ffff:127.0.0.1]` and `[::ffff:7f00:1]`.
 * Returns null for a pattern that cannot match anything valid.
 */
export function compileHostPattern (text: string): HostPattern | null {
  if (text === '*') return { text, matches: () => true }
  if (text.startsWith('*.')) {
    const suffix = canonicalConfiguredHost(text.slice(2))
    if (suffix === null) return null
    const dottedSuffix = `.${suffix}`
    return { text, matches: (host) => host.endsWith(dottedSuffix) && host.length > dottedSuffix.length }
  }
  if (text.includes('/')) return compileRange(text)
  const exact = canonicalConfiguredHost(text)
  if (exact === null) return null
  const address = dialedAddressBytes(exact)
  if (address !== null) {
    return {
      text,
      matches: (host) => {
        const target = dialedAddressBytes(host)
        return target !== null && sameBytes(target, address)
      }
    }
  }
  return { text, matches: (host) => host === exact }
}

function compileRange (text: string): HostPattern | null {
  const range = parseDialedCidr(text.trim())
  if (range === null) return null
  return {
    text,
    matches: (host) => {
      const target = dialedAddressBytes(host)
      return target !== null && cidrContains(range, target)
    }
  }
}

/**
 * Parses a CIDR range (as {@link parseCidr}) in the form {@link dialedAddressBytes} gives the
 * addresses it is matched against: an IPv4-mapped range (`::ffff:10.0.0.0/104`,
 * `::ffff:127.0.0.1`) becomes the IPv4 range it maps. Null also for a mapped network with a
 * prefix shorter than the 96 bits before its IPv4 part (`::ffff:10.0.0.0/8`), which names no
 * IPv4 range.
 */
export function parseDialedCidr (text: string): Cidr | null {
  const range = parseCidr(text)
  if (range === null || range.network.length === 4) return range
  const network = dialedAddressBytes(text.split('/')[0] ?? '')
  if (network === null || network.length === 16) return range
  return range.prefixLength < 96 ? null : { text, network, prefixLength: range.prefixLength - 96 }
}

/** True when any pattern matches `host` (already canonical). */
export function matchesAny (patterns: readonly HostPattern[], host: string): boolean {
  return patterns.some((pattern) => pattern.matches(host))
}

const AUTHORITY = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]]+)(?::([0-9]{1,5}))?$/

/**
 * True when a `Host` value names `destination`: same canonical host (case, IDNA and IPv4
 * spellings normalized) and same port, an omitted port meaning `defaultPort`.
 */
export function isEquivalentAuthority (hostHeader: string, destination: ForwardProxyDestination, defaultPort: number): boolean {
  const spelledAlike = spelledAsDestination(hostHeader, destination)
  if (spelledAlike !== undefined) return spelledAlike === 'host' ? destination.port === defaultPort : true
  const match = AUTHORITY.exec(hostHeader.trim())
  if (match === null) return false
  const [, rawHost = '', rawPort] = match
  const port = rawPort === undefined ? defaultPort : Number(rawPort)
  return port === destination.port && canonicalHost(rawHost) === destination.host
}

/**
 * Whether `hostHeader` is spelled exactly as the destination's own host (`host`) or as its host
 * and port (`host-and-port`): the usual case, decided without the pattern and the canonical
 * host's lookup that `isEquivalentAuthority` runs for every request inside a tunnel. Undefined
 * when it is spelled any other way, or when the destination is an IPv6 address: its bare
 * spelling (`::1`) is not a valid `Host`, which must bracket it.
 */
function spelledAsDestination (hostHeader: string, destination: ForwardProxyDestination): 'host' | 'host-and-port' | undefined {
  const { host } = destination
  if (host.length === 0 || !hostHeader.startsWith(host) || host.includes(':')) return undefined
  if (hostHeader.length === host.length) return 'host'
  if (hostHeader.charCodeAt(host.length) !== COLON) return undefined
  return hostHeader.slice(host.length + 1) === String(destination.port) ? 'host-and-port' : undefined
}

const COLON = 0x3a

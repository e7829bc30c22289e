import { cidrContains, parseCidr, type Cidr } from './cidr'
import { parseIP } from './ip-address'

/** Why an address is not a public unicast destination. */
export type AddressCategory =
  | 'unspecified' | 'loopback' | 'private' | 'link-local' | 'shared (CGNAT)' | 'multicast'
  | 'reserved' | 'documentation' | 'benchmarking' | 'unique-local' | 'site-local'
  | 'IETF protocol assignment' | 'discard-only' | 'broadcast'

interface NamedRange { readonly range: Cidr, readonly category: AddressCategory }

function ranges (entries: ReadonlyArray<readonly [string, AddressCategory]>): NamedRange[] {
  return entries.map(([text, category]) => {
    const range = parseCidr(text)
    if (range === null) throw new Error(`bad built-in range ${text}`)
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
export function embeddedIPv4 (bytes: Uint8Array): Uint8Array | null {
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

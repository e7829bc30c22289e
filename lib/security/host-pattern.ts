import { canonicalConfiguredHost } from './canonical-host'
import { cidrContains, parseCidr } from './cidr'
import { dialedAddressBytes, sameBytes } from './ip-address'

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
  const range = parseCidr(text.trim())
  if (range === null) return null
  const network = dialedAddressBytes(range.text.split('/')[0] ?? '')
  // An IPv4-mapped range (::ffff:10.0.0.0/104) is the IPv4 range it maps.
  const mapped = network !== null && network.length === 4 && range.network.length === 16
  const effective = mapped ? { ...range, network, prefixLength: range.prefixLength - 96 } : range
  if (effective.prefixLength < 0) return null
  return {
    text,
    matches: (host) => {
      const target = dialedAddressBytes(host)
      return target !== null && cidrContains(effective, target)
    }
  }
}

/** True when any pattern matches `host` (already canonical). */
export function matchesAny (patterns: readonly HostPattern[], host: string): boolean {
  return patterns.some((pattern) => pattern.matches(host))
}

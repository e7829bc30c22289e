import { matchesPrefix, parseIP } from './ip-address'

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

import { isIPv4, isIPv6 } from 'node:net'

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

/** Formats 4 bytes as a dotted quad. */
export function formatIPv4 (bytes: Uint8Array): string {
  return Array.from(bytes.subarray(0, 4)).join('.')
}

/** True when the first `prefixLength` bits of `address` and `network` agree. */
export function matchesPrefix (address: Uint8Array, network: Uint8Array, prefixLength: number): boolean {
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
 */
export function dialedAddressBytes (text: string): Uint8Array | null {
  const bytes = parseIP(text)
  if (bytes === null || bytes.length === 4) return bytes
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return bytes
  return bytes[10] === 0xff && bytes[11] === 0xff ? bytes.slice(12) : bytes
}

/** True when `a` and `b` hold the same bytes. */
export function sameBytes (a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, index) => byte === b[index])
}

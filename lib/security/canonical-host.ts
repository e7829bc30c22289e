import { isIPv6 } from 'node:net'

// RFC 3986 reg-name characters we accept in a request target, minus percent-encoding and
// sub-delims: a host name is letters, digits, '-', '.', '_' and '~'.
const REG_NAME = /^[A-Za-z0-9._~-]+$/

/**
 * Canonicalizes the host of a request target the way a browser would resolve it: lower case,
 * IDNA (punycode), alternate IPv4 spellings (`127.1`, `0x7f000001`, `2130706433`, `0177.0.0.1`)
 * turned into dotted quads, IPv6 compressed and unbracketed, one trailing dot removed.
 * Returns null when the text is not a usable host: empty, percent-encoded, with userinfo or
 * other characters a host cannot hold. Policy is always applied to this canonical form.
 */
export function canonicalHost (rawHost: string): string | null {
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
  if (hostname.split('.').includes('')) return null
  return bracketless(hostname)
}

/** Canonicalizes a host pattern or host name given in configuration (non-ASCII allowed there). */
export function canonicalConfiguredHost (text: string): string | null {
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
  return isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`
}

/** Formats a `Host` header value: the authority, without the port when it is the scheme's default. */
export function formatHostHeader (host: string, port: number, defaultPort: number): string {
  if (port !== defaultPort) return formatAuthority(host, port)
  return isIPv6(host) ? `[${host}]` : host
}

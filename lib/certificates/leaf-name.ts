import { isIPv6 } from 'node:net'
import { parseIPv4, parseIPv6 } from '../security/ip-address'
import { ForwardProxyCertificateError } from './certificate-error'

/** The name a leaf is issued for: an IP address (4 or 16 bytes) or a DNS name. */
export type LeafName =
  | { readonly type: 'ip', readonly bytes: Uint8Array }
  | { readonly type: 'dns', readonly name: string }

// What canonicalHost lets through as a name: lower-case LDH labels (plus '_' and '~', which
// some private networks use), punycode for IDN. Never '*': leaves are never wildcards.
const LABEL = /^[a-z0-9_~-]{1,63}$/
const NUMERIC_LABEL = /^[0-9]+$/
const MAX_NAME_LENGTH = 253

/**
 * Classifies a canonical destination host (`ForwardProxyDestination.host`): an IPv4 or IPv6
 * literal (no brackets, no zone) becomes an IP name, anything else must be a canonical DNS
 * name: lower case, ASCII (punycode for IDN), no empty label, no wildcard.
 * @throws ForwardProxyCertificateError (`invalid_host`).
 */
export function leafName (host: string): LeafName {
  if (typeof host !== 'string') throw invalid('(not a string)')
  const v4 = parseIPv4(host)
  if (v4 !== null) return { type: 'ip', bytes: v4 }
  if (isIPv6(host)) {
    // Only the canonical spelling (compressed, lower case) and never a zone: `fe80::1%eth0`
    // names a local interface, and another spelling would be cached apart from the canonical one.
    const v6 = host.includes('%') || canonicalIPv6(host) !== host ? null : parseIPv6(host)
    if (v6 === null) throw invalid(JSON.stringify(host))
    return { type: 'ip', bytes: v6 }
  }
  const labels = host.split('.')
  const last = labels[labels.length - 1] ?? ''
  if (host.length > MAX_NAME_LENGTH || !labels.every((label) => LABEL.test(label)) || NUMERIC_LABEL.test(last)) {
    throw invalid(JSON.stringify(host.slice(0, MAX_NAME_LENGTH + 1)))
  }
  return { type: 'dns', name: host }
}

function canonicalIPv6 (host: string): string {
  return new URL(`http://[${host}]/`).hostname.slice(1, -1)
}

function invalid (shown: string): ForwardProxyCertificateError {
  return new ForwardProxyCertificateError('invalid_host', `no leaf certificate is issued for host ${shown}: not a canonical host name or IP address (lower case, punycode, no wildcard)`)
}

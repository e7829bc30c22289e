// A CA certificate's name constraints (RFC 5280 section 4.2.1.10): read from the certificate,
// and checked against the name of a leaf before it is minted.

import type { LeafName } from './leaf'
import { DER_TAG, childrenOf, contentOf, expectElement, type DerElement } from './der'

/** The nameConstraints extension's object identifier. */
export const NAME_CONSTRAINTS_OID = '2.5.29.30'
// GeneralName choices as implicitly tagged in a GeneralSubtree's base (RFC 5280 4.2.1.6).
const DNS_NAME = 0x82
const IP_ADDRESS = 0x87
const DOTTED_QUAD = /^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$/

/** One subtree of a nameConstraints extension that can apply to a leaf's name. */
type Subtree =
  | { readonly type: 'dns', readonly name: string }
  | { readonly type: 'ip', readonly address: Uint8Array, readonly mask: Uint8Array }

/** The DNS and IP subtrees of one certificate's nameConstraints (RFC 5280 4.2.1.10). */
export interface NameSubtrees {
  readonly permitted: readonly Subtree[]
  readonly excluded: readonly Subtree[]
}

/**
 * Reads the DNS-name and IP-address subtrees of a nameConstraints extension (its extnValue
 * content, DER). Other name forms (e-mail, URI, directory name) never appear in the leaves the
 * provider mints, so they are not kept.
 * @throws DerError when the extension is not DER of that shape.
 */
export function readNameConstraints (extensionValue: Uint8Array): NameSubtrees {
  const constraints = expectElement(extensionValue, DER_TAG.sequence)
  let permitted: Subtree[] = []
  let excluded: Subtree[] = []
  // permittedSubtrees [0] and excludedSubtrees [1], each implicitly a SEQUENCE OF GeneralSubtree.
  for (const part of childrenOf(constraints)) {
    if (part.tag === DER_TAG.context0) permitted = subtrees(part)
    else if (part.tag === DER_TAG.context1) excluded = subtrees(part)
  }
  return { permitted, excluded }
}

/**
 * Says why a leaf for `host` (classified as `name`) would break the chain's name constraints (so clients would refuse
 * it), or null when every certificate's constraints allow it. Per RFC 5280, a name must lie in
 * one permitted subtree of its own type, when a certificate lists any of that type, and in no
 * excluded subtree.
 */
export function nameConstraintViolation (host: string, name: LeafName, chain: readonly NameSubtrees[]): string | null {
  const violation = violationOf(name, chain)
  if (violation !== null || name.type !== 'ip' || !DOTTED_QUAD.test(host)) return violation
  // The leaf's subject CN is the host. OpenSSL (so Node and curl) checks the CN of a leaf
  // without DNS SANs as a DNS name when it looks like one, which a dotted quad does.
  const commonName = violationOf({ type: 'dns', name: host }, chain)
  return commonName === null ? null : `${commonName} (OpenSSL checks an IPv4 leaf's common name as a DNS name)`
}

function violationOf (name: LeafName, chain: readonly NameSubtrees[]): string | null {
  for (const constraints of chain) {
    const excluded = constraints.excluded.find((subtree) => within(name, subtree))
    if (excluded !== undefined) return `the CA's nameConstraints exclude ${describe(excluded)}`
    const permitted = constraints.permitted.filter((subtree) => subtree.type === name.type)
    if (permitted.length > 0 && !permitted.some((subtree) => within(name, subtree))) {
      return `the CA's nameConstraints permit only ${permitted.map(describe).join(', ')}`
    }
  }
  return null
}

function subtrees (list: DerElement): Subtree[] {
  const result: Subtree[] = []
  for (const subtree of childrenOf(list)) {
    const base = childrenOf(subtree)[0]
    if (base?.tag === DNS_NAME) {
      result.push({ type: 'dns', name: Buffer.from(contentOf(base)).toString('latin1').toLowerCase().replace(/\.$/, '') })
    } else if (base?.tag === IP_ADDRESS) {
      const bytes = contentOf(base)
      // An iPAddress constraint is an address followed by a mask of the same length.
      if (bytes.length === 8 || bytes.length === 32) {
        const half = bytes.length / 2
        result.push({ type: 'ip', address: bytes.subarray(0, half), mask: bytes.subarray(half) })
      }
    }
  }
  return result
}

function within (name: LeafName, subtree: Subtree): boolean {
  if (name.type === 'dns' && subtree.type === 'dns') {
    const base = subtree.name
    if (base === '') return true
    // A leading dot (an OpenSSL and browser convention) means names below it only.
    if (base.startsWith('.')) return name.name.endsWith(base)
    return name.name === base || name.name.endsWith(`.${base}`)
  }
  if (name.type === 'ip' && subtree.type === 'ip') {
    if (name.bytes.length !== subtree.address.length) return false
    return name.bytes.every((byte, index) => (byte & (subtree.mask[index] ?? 0)) === ((subtree.address[index] ?? 0) & (subtree.mask[index] ?? 0)))
  }
  return false
}

function describe (subtree: Subtree): string {
  if (subtree.type === 'dns') return `DNS:${subtree.name === '' ? '(any)' : subtree.name}`
  const prefix = subtree.mask.reduce((bits, byte) => bits + popcount(byte), 0)
  const address = subtree.address.length === 4
    ? Array.from(subtree.address).join('.')
    : Array.from({ length: 8 }, (_, index) => (((subtree.address[index * 2] ?? 0) << 8) | (subtree.address[index * 2 + 1] ?? 0)).toString(16)).join(':')
  return `IP:${address}/${prefix}`
}

function popcount (byte: number): number {
  let bits = 0
  for (let value = byte; value > 0; value >>= 1) bits += value & 1
  return bits
}

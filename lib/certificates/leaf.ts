// Leaf certificates: key pairs, extensions, names, validity and serial numbers.

import { generateKeyPair, createHash, randomFillSync } from 'node:crypto'
import { isIPv6 } from 'node:net'
import type { CertificateExtension } from './certificate-writer'
import { derBitString, derContext, derObjectIdentifier, derOctetString, derSequence } from './der-writer'
import type { ForwardProxyLeafKeyType } from '../../types/certificates'
import { parseIPv4, parseIPv6 } from '../protocol/hosts'
import { ForwardProxyCertificateError } from './errors'

/** A freshly generated leaf key pair: public key as DER SPKI, private key as PEM PKCS#8. */
export interface LeafKeyPair {
  readonly type: ForwardProxyLeafKeyType
  readonly spki: Buffer
  readonly privateKeyPem: string
}

/**
 * Generates a leaf key pair on libuv's thread pool (not the event loop): ECDSA P-256 or
 * RSA 2048 with exponent 65537.
 */
export async function generateLeafKeyPair (type: ForwardProxyLeafKeyType): Promise<LeafKeyPair> {
  return await new Promise((resolve, reject) => {
    const done = (error: Error | null, spki: Buffer, privateKeyPem: string): void => {
      if (error !== null) reject(error)
      else resolve({ type, spki, privateKeyPem })
    }
    const publicKeyEncoding = { type: 'spki', format: 'der' } as const
    const privateKeyEncoding = { type: 'pkcs8', format: 'pem' } as const
    if (type === 'rsa-2048') generateKeyPair('rsa', { modulusLength: 2048, publicExponent: 0x10001, publicKeyEncoding, privateKeyEncoding }, done)
    else generateKeyPair('ec', { namedCurve: 'P-256', publicKeyEncoding, privateKeyEncoding }, done)
  })
}

/**
 * Key pairs generated ahead of need. Each pair is handed out once, never reused; taking one
 * starts generating its replacement. With size 0 every pair is generated on demand.
 */
export class LeafKeyPool {
  readonly #type: ForwardProxyLeafKeyType
  readonly #size: number
  readonly #ready: LeafKeyPair[] = []
  #generating = 0

  constructor (type: ForwardProxyLeafKeyType, size: number) {
    this.#type = type
    this.#size = size
    this.#refill()
  }

  /** Number of pairs ready to be taken. */
  get ready (): number {
    return this.#ready.length
  }

  /** A pooled pair when one is ready, else a newly generated one. */
  async take (): Promise<LeafKeyPair> {
    const pair = this.#ready.shift()
    this.#refill()
    return pair ?? await generateLeafKeyPair(this.#type)
  }

  #refill (): void {
    while (this.#ready.length + this.#generating < this.#size) {
      this.#generating++
      generateLeafKeyPair(this.#type).then((pair) => {
        this.#ready.push(pair)
      }, () => {
        // A failed pre-generation only leaves the pool short; take() generates on demand.
      }).finally(() => {
        this.#generating--
      })
    }
  }
}

/** Object identifiers of the extensions a leaf carries (RFC 5280 4.2.1). */
export const EXTENSION_OID = {
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  authorityKeyIdentifier: '2.5.29.35',
  extKeyUsage: '2.5.29.37'
} as const

/** id-kp-serverAuth (RFC 5280 4.2.1.12). */
const SERVER_AUTH_OID = '1.3.6.1.5.5.7.3.1'

const GENERAL_NAME_DNS = 2
const GENERAL_NAME_IP = 7

/** What the extensions of one leaf depend on. */
export interface LeafExtensionInput {
  readonly name: LeafName
  readonly keyType: ForwardProxyLeafKeyType
  /** The subjectPublicKey bits of `leafSpki`, for the subject key identifier. */
  readonly leafPublicKeyBits: Uint8Array
  /** The issuing CA's subject key identifier. */
  readonly caKeyIdentifier: Uint8Array
  /** True when the leaf's subject is empty (a host too long for a common name). */
  readonly emptySubject?: boolean
}

/** RFC 5280's upper bound on a common name (ub-common-name), in characters. */
const MAX_COMMON_NAME_LENGTH = 64

/**
 * True when a leaf for `host` carries it as its subject's common name; false for a host longer
 * than a common name may be (RFC 5280's 64 characters), whose leaf has an empty subject and
 * names the host in its subjectAltName alone, marked critical as RFC 5280 section 4.2.1.6 asks.
 */
export function hostFitsCommonName (host: string): boolean {
  return host.length <= MAX_COMMON_NAME_LENGTH
}

/**
 * The extensions of a leaf: basicConstraints cA false (critical); keyUsage
 * digitalSignature, plus keyEncipherment for RSA keys (critical); extKeyUsage serverAuth; one
 * subjectAltName (iPAddress for an IP host, else dNSName; critical when the subject is empty,
 * see {@link hostFitsCommonName}); authorityKeyIdentifier from the CA; subjectKeyIdentifier
 * (RFC 5280 method 1).
 */
export function leafExtensions (input: LeafExtensionInput): CertificateExtension[] {
  // cA is FALSE by default, and DER leaves a default out: an empty SEQUENCE.
  const basicConstraints = derSequence()
  // Named bits: digitalSignature is bit 0 (0x80), keyEncipherment bit 2 (0x20).
  const keyUsage = input.keyType === 'rsa-2048' ? derBitString(Uint8Array.of(0xa0), 5) : derBitString(Uint8Array.of(0x80), 7)
  const extKeyUsage = derSequence(derObjectIdentifier(SERVER_AUTH_OID))
  // AuthorityKeyIdentifier ::= SEQUENCE { keyIdentifier [0] IMPLICIT OCTET STRING, ... }
  const authorityKeyIdentifier = derSequence(derContext(0, false, input.caKeyIdentifier))
  const subjectKeyIdentifier = derOctetString(keyIdentifierOf(input.leafPublicKeyBits))
  return [
    { oid: EXTENSION_OID.basicConstraints, critical: true, value: basicConstraints },
    { oid: EXTENSION_OID.keyUsage, critical: true, value: keyUsage },
    { oid: EXTENSION_OID.extKeyUsage, critical: false, value: extKeyUsage },
    { oid: EXTENSION_OID.subjectAltName, critical: input.emptySubject === true, value: subjectAltNameValue(input.name) },
    { oid: EXTENSION_OID.authorityKeyIdentifier, critical: false, value: authorityKeyIdentifier },
    { oid: EXTENSION_OID.subjectKeyIdentifier, critical: false, value: subjectKeyIdentifier }
  ]
}

/**
 * A key identifier by RFC 5280's method 1: the SHA-1 of a subjectPublicKey's bits (without the
 * BIT STRING's tag, length and unused-bits count). The subject key identifier of the leaves and
 * of the development CA, and of an operator CA that carries none.
 */
export function keyIdentifierOf (subjectPublicKeyBits: Uint8Array): Uint8Array {
  return new Uint8Array(createHash('sha1').update(subjectPublicKeyBits).digest())
}

/**
 * The subjectAltName value naming `name` alone (GeneralNames, DER): an iPAddress ([7], the
 * address's bytes) for an IP name, else a dNSName ([2], an IA5String).
 */
export function subjectAltNameValue (name: LeafName): Buffer {
  return derSequence(name.type === 'ip'
    ? derContext(GENERAL_NAME_IP, false, name.bytes)
    : derContext(GENERAL_NAME_DNS, false, Buffer.from(name.name, 'latin1')))
}

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

/** How far a leaf's validity starts before it is minted, for clients whose clocks run behind. */
const BACKDATE_MS = 5 * 60_000

/** Validity of one leaf and when the cache should replace it. */
export interface LeafValidity {
  readonly notBefore: Date
  readonly notAfter: Date
  /** From this time on the cache re-mints in the background (milliseconds since the epoch). */
  readonly renewAt: number
}

/**
 * The validity window of a leaf minted at `now`: from 5 minutes before (never before the CA's
 * notBefore) for `lifetimeMs` (never past the CA's notAfter), in whole seconds as X.509 times
 * hold them. Renewal is due when a third of the window remains; a leaf cut short by the CA's
 * end is not renewed early, since a new one could not last longer.
 * @throws ForwardProxyCertificateError (`mint_failed`) when the CA has expired.
 */
export function leafValidity (now: number, lifetimeMs: number, ca: { readonly notBefore: number, readonly notAfter: number }): LeafValidity {
  if (now >= ca.notAfter) {
    throw new ForwardProxyCertificateError('mint_failed', `the CA certificate expired on ${new Date(ca.notAfter).toISOString()}; no leaf can be issued`)
  }
  const notBefore = Math.max(wholeSeconds(now - BACKDATE_MS), ca.notBefore)
  const wanted = wholeSeconds(now + lifetimeMs)
  const notAfter = Math.min(wanted, ca.notAfter)
  const renewAt = wanted > ca.notAfter ? notAfter : notBefore + Math.floor((notAfter - notBefore) * 2 / 3)
  return { notBefore: new Date(notBefore), notAfter: new Date(notAfter), renewAt }
}

function wholeSeconds (ms: number): number {
  return Math.floor(ms / 1000) * 1000
}

const SERIAL_BYTES = 16

/**
 * A random positive serial number of 16 bytes (127 bits of randomness), as DER INTEGER
 * content bytes: the high bit is cleared so it is positive, and the first byte is never zero
 * so the encoding stays minimal and the value non-zero (CA/B BR 7.1: at least 64 random bits).
 */
export function randomSerialNumber (): Uint8Array {
  const bytes = new Uint8Array(SERIAL_BYTES)
  do {
    randomFillSync(bytes)
    bytes[0] = (bytes[0] ?? 0) & 0x7f
  } while (bytes[0] === 0)
  return bytes
}

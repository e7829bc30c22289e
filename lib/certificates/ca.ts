// The operator's CA: loaded and checked (its fields read from its DER through
// ./certificate-fields, its name constraints through ./name-constraints), its key, and the leaves
// it signs (written by ./certificate-writer).

import { type X509Certificate, createPrivateKey, webcrypto, type KeyObject } from 'node:crypto'
import { createSecureContext } from 'node:tls'
import { ForwardProxyCertificateError } from './errors'
import { NAME_CONSTRAINTS_OID, readNameConstraints, type NameSubtrees } from './name-constraints'
import { parseCertificates, pemCertificateBlocks, derToPem } from './pem'
import { readCertificateFields, subjectPublicKeyBitsOf, type CertificateFields } from './certificate-fields'
import { DER_TAG, DerError, bitStringBits, childrenOf, contentOf, expectElement, readElement } from './der'
import { EMPTY_NAME, commonNameOnly, signCertificate, type CertificateSigningKey, type SignatureHash } from './certificate-writer'
import {
  EXTENSION_OID,
  hostFitsCommonName,
  keyIdentifierOf,
  leafExtensions,
  type LeafKeyPair,
  leafName,
  type LeafValidity,
  randomSerialNumber
} from './leaf'
import type { ForwardProxyIssuedLeaf, ForwardProxyLeafKeyType } from '../../types/certificates'

const KEY_CERT_SIGN = 0x04 // bit 5 of the first byte of keyUsage

/** The operator's CA, checked and ready to sign leaves. Holds no extractable key material. */
export interface CertificateAuthority {
  /** The CA's subject (its DER Name), copied byte for byte as the issuer of every leaf. */
  readonly subject: Uint8Array
  /** The CA's subject key identifier (or the RFC 5280 method 1 value when it has none). */
  readonly keyIdentifier: Uint8Array
  /** Validity of the CA, milliseconds since the epoch. */
  readonly notBefore: number
  readonly notAfter: number
  /** PEM sent after each leaf: the issuing CA, then its own intermediates. */
  readonly chainPem: string
  /** The nameConstraints of the CA and its intermediates, which every leaf name must satisfy. */
  readonly nameConstraints: readonly NameSubtrees[]
  /** Resolves to the WebCrypto signing key (imported once, in the background). */
  readonly signingKey: Promise<CertificateSigningKey>
}

/** What `loadCertificateAuthority` reads. */
export interface CertificateAuthorityMaterial {
  readonly cert: string | Buffer
  readonly key: string | Buffer
  readonly passphrase?: string | Buffer | undefined
}

/**
 * Checks and loads the operator's CA: the first PEM certificate must be a CA (basicConstraints
 * cA true, keyUsage keyCertSign) valid at `now`, any further certificates must each issue the
 * one before, and the key must be the CA certificate's.
 * @throws ForwardProxyCertificateError (`bad_ca_certificate`, `bad_ca_key`, `key_mismatch`).
 */
export function loadCertificateAuthority (material: CertificateAuthorityMaterial, now: number): CertificateAuthority {
  const certText = Buffer.isBuffer(material.cert) ? material.cert.toString('latin1') : material.cert
  if (typeof certText !== 'string') throw new ForwardProxyCertificateError('invalid_option', 'option "cert" must be PEM text (string or Buffer)')
  const blocks = pemCertificateBlocks(certText)
  const certificates = parseCertificates(blocks)
  const ca = certificates?.[0]
  if (certificates === null || ca === undefined) {
    throw new ForwardProxyCertificateError('bad_ca_certificate', 'the CA certificate is not a PEM certificate')
  }
  const parsed = readCaFields(ca.raw, 'the CA certificate')
  checkIsCa(parsed)
  const { notBefore, notAfter } = parsed
  if (notAfter <= now) throw new ForwardProxyCertificateError('bad_ca_certificate', `the CA certificate expired on ${new Date(notAfter).toISOString()}`)
  if (notBefore > now) throw new ForwardProxyCertificateError('bad_ca_certificate', `the CA certificate is not valid before ${new Date(notBefore).toISOString()}`)
  checkChainOrder(certificates)

  if (typeof material.key !== 'string' && !Buffer.isBuffer(material.key)) {
    throw new ForwardProxyCertificateError('invalid_option', 'option "key" must be PEM text (string or Buffer)')
  }
  const keyObject = readCaPrivateKey(material.key, material.passphrase)
  caKeyAlgorithm(keyObject)
  if (!ca.checkPrivateKey(keyObject)) {
    throw new ForwardProxyCertificateError('key_mismatch', `the CA key does not belong to the CA certificate (${ca.subject.replace(/\n/g, ', ')})`)
  }
  const signingKey = importCaSigningKey(keyObject)
  signingKey.catch(() => {}) // awaited by every mint; this only keeps an early failure from being unhandled

  return {
    subject: new Uint8Array(parsed.subject),
    keyIdentifier: subjectKeyIdentifier(parsed),
    notBefore,
    notAfter,
    chainPem: blocks.map((block) => `${block}\n`).join(''),
    nameConstraints: chainNameConstraints(parsed, certificates.slice(1)),
    signingKey
  }
}

/**
 * Reads the fields of the CA (or an intermediate, `what`) the checks need, from its DER.
 * @throws ForwardProxyCertificateError (`bad_ca_certificate`) when they cannot be read.
 */
function readCaFields (der: Uint8Array, what: string): CertificateFields {
  try {
    return readCertificateFields(der)
  } catch (error) {
    if (error instanceof DerError) throw new ForwardProxyCertificateError('bad_ca_certificate', `${what} could not be read: ${error.message}`)
    throw error
  }
}

function checkIsCa (parsed: CertificateFields): void {
  // Read basicConstraints itself: Node's X509Certificate.ca also says false for a keyUsage
  // without keyCertSign, and each case deserves its own message.
  if (!basicConstraintsSayCa(parsed.extensions.get(EXTENSION_OID.basicConstraints))) {
    throw new ForwardProxyCertificateError('bad_ca_certificate', 'the CA certificate is not a CA: it lacks basicConstraints with cA true')
  }
  if ((keyUsageFirstByte(parsed.extensions.get(EXTENSION_OID.keyUsage)) & KEY_CERT_SIGN) === 0) {
    throw new ForwardProxyCertificateError('bad_ca_certificate', 'the CA certificate may not sign certificates: its keyUsage lacks keyCertSign (or it has no keyUsage); issue it with "keyUsage = critical, keyCertSign, cRLSign"')
  }
}

/** Whether a basicConstraints value (SEQUENCE { cA BOOLEAN DEFAULT FALSE, ... }) has cA true. */
function basicConstraintsSayCa (value: Uint8Array | undefined): boolean {
  if (value === undefined) return false
  try {
    const first = childrenOf(expectElement(value, DER_TAG.sequence))[0]
    return first?.tag === DER_TAG.boolean && contentOf(first)[0] !== 0 && contentOf(first).length === 1
  } catch {
    return false
  }
}

/** The first byte of a keyUsage value (a BIT STRING), 0 when absent or unreadable. */
function keyUsageFirstByte (value: Uint8Array | undefined): number {
  if (value === undefined) return 0
  try {
    return bitStringBits(readElement(value))[0] ?? 0
  } catch {
    return 0
  }
}

function checkChainOrder (certificates: readonly X509Certificate[]): void {
  for (let index = 1; index < certificates.length; index++) {
    const child = certificates[index - 1]
    const issuer = certificates[index]
    if (child === undefined || issuer === undefined) continue
    if (!issuer.ca || !child.checkIssued(issuer) || !child.verify(issuer.publicKey)) {
      throw new ForwardProxyCertificateError('bad_ca_certificate', `certificate ${index + 1} of "cert" is not the CA that issued certificate ${index}; list the issuing CA first, then each issuer in turn`)
    }
  }
}

/**
 * The nameConstraints of the CA and of each intermediate that has them.
 * @throws ForwardProxyCertificateError (`bad_ca_certificate`) for one that cannot be read: the
 * leaves would have to satisfy constraints nobody can check.
 */
function chainNameConstraints (ca: CertificateFields, intermediates: readonly X509Certificate[]): NameSubtrees[] {
  const chain = [ca, ...intermediates.map((certificate, index) => readCaFields(certificate.raw, `certificate ${index + 2} of "cert"`))]
  const constraints: NameSubtrees[] = []
  chain.forEach((certificate, index) => {
    const value = certificate.extensions.get(NAME_CONSTRAINTS_OID)
    if (value === undefined) return
    try {
      constraints.push(readNameConstraints(value))
    } catch {
      throw new ForwardProxyCertificateError('bad_ca_certificate', `the nameConstraints of ${index === 0 ? 'the CA certificate' : `certificate ${index + 1} of "cert"`} could not be read`)
    }
  })
  return constraints
}

function subjectKeyIdentifier (parsed: CertificateFields): Uint8Array {
  const value = parsed.extensions.get(EXTENSION_OID.subjectKeyIdentifier)
  if (value !== undefined) {
    try {
      const identifier = contentOf(expectElement(value, DER_TAG.octetString))
      if (identifier.length > 0) return new Uint8Array(identifier)
    } catch {
      // Unreadable: computed below, as for a CA without one.
    }
  }
  return keyIdentifierOf(parsed.subjectPublicKeyBits)
}

type ImportAlgorithm = webcrypto.RsaHashedImportParams | webcrypto.EcKeyImportParams

const EC_CURVES: Readonly<Record<string, { namedCurve: string, hash: SignatureHash }>> = {
  prime256v1: { namedCurve: 'P-256', hash: 'SHA-256' },
  secp384r1: { namedCurve: 'P-384', hash: 'SHA-384' },
  secp521r1: { namedCurve: 'P-521', hash: 'SHA-512' }
}

const MIN_RSA_BITS = 2048

/**
 * Reads the CA private key from PEM: PKCS#8 (encrypted with `passphrase` or not), PKCS#1 RSA
 * or SEC1 EC. Errors say what is wrong without quoting the key, the passphrase or OpenSSL's
 * own message.
 * @throws ForwardProxyCertificateError (`bad_ca_key`).
 */
function readCaPrivateKey (key: string | Buffer, passphrase: string | Buffer | undefined): KeyObject {
  const text = Buffer.isBuffer(key) ? key.toString('latin1') : key
  if (!/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/.test(text)) {
    throw new ForwardProxyCertificateError('bad_ca_key', 'the CA key is not a PEM private key (PKCS#8, PKCS#1 RSA or SEC1 EC)')
  }
  const encrypted = text.includes('-----BEGIN ENCRYPTED PRIVATE KEY-----') || /Proc-Type:\s*4,ENCRYPTED/.test(text)
  if (encrypted && (passphrase === undefined || passphrase.length === 0)) {
    throw new ForwardProxyCertificateError('bad_ca_key', 'the CA key is encrypted: give its passphrase')
  }
  try {
    return createPrivateKey({ key: text, format: 'pem', ...(passphrase === undefined ? {} : { passphrase }) })
  } catch {
    throw new ForwardProxyCertificateError('bad_ca_key', encrypted
      ? 'the CA key could not be decrypted with the passphrase given'
      : 'the CA key could not be read as a PEM private key (PKCS#8, PKCS#1 RSA or SEC1 EC)')
  }
}

/**
 * The import parameters and signature digest for a CA key: RSA (2048 bits or more,
 * PKCS#1 v1.5 with SHA-256) or ECDSA P-256, P-384, P-521 (SHA-256, SHA-384, SHA-512).
 * @throws ForwardProxyCertificateError (`bad_ca_key`) for any other key.
 */
function caKeyAlgorithm (keyObject: KeyObject): { algorithm: ImportAlgorithm, hash: SignatureHash } {
  const details = keyObject.asymmetricKeyDetails ?? {}
  if (keyObject.asymmetricKeyType === 'rsa') {
    if ((details.modulusLength ?? 0) < MIN_RSA_BITS) {
      throw new ForwardProxyCertificateError('bad_ca_key', `RSA CA keys shorter than ${MIN_RSA_BITS} bits are refused`)
    }
    return { algorithm: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, hash: 'SHA-256' }
  }
  if (keyObject.asymmetricKeyType === 'ec') {
    const curve = EC_CURVES[details.namedCurve ?? '']
    if (curve !== undefined) return { algorithm: { name: 'ECDSA', namedCurve: curve.namedCurve }, hash: curve.hash }
    throw new ForwardProxyCertificateError('bad_ca_key', `the CA key's curve ${String(details.namedCurve)} is not supported (P-256, P-384, P-521)`)
  }
  throw new ForwardProxyCertificateError('bad_ca_key', `CA keys of type ${String(keyObject.asymmetricKeyType)} are not supported (RSA, ECDSA P-256, P-384, P-521)`)
}

/**
 * Imports the CA key into WebCrypto as a non-extractable signing key. The PKCS#8 bytes made
 * on the way are wiped once imported.
 */
async function importCaSigningKey (keyObject: KeyObject): Promise<CertificateSigningKey> {
  const { algorithm, hash } = caKeyAlgorithm(keyObject)
  const pkcs8 = keyObject.export({ type: 'pkcs8', format: 'der' })
  try {
    const privateKey = await webcrypto.subtle.importKey('pkcs8', pkcs8, algorithm, false, ['sign'])
    return { privateKey, hash }
  } finally {
    pkcs8.fill(0)
  }
}

/** A leaf certificate signed by the CA, without its private key. */
export interface SignedLeaf {
  /** The certificate (PEM). */
  readonly cert: string
  /** Serial number as upper-case hex. */
  readonly serialNumber: string
}

/**
 * Signs a leaf certificate for `host` over the public key `spki` (DER SubjectPublicKeyInfo)
 * with `ca`: subject CN = host (an empty subject for a host over 64 characters, see
 * `hostFitsCommonName`), the CA's subject as issuer, a random serial, the leaf extensions.
 * `keyType` picks the key usage bits. Used by `mintLeaf` and by signers of requests whose
 * private key lives elsewhere (EST).
 * @throws ForwardProxyCertificateError (`invalid_host`, `mint_failed`).
 */
export async function signLeaf (
  ca: CertificateAuthority,
  host: string,
  spki: Uint8Array,
  keyType: ForwardProxyLeafKeyType,
  validity: LeafValidity
): Promise<SignedLeaf> {
  const name = leafName(host)
  const fitsCommonName = hostFitsCommonName(host)
  const serialNumber = randomSerialNumber()
  let der: Buffer | null
  try {
    const leafPublicKeyBits = subjectPublicKeyBitsOf(spki)
    der = await signCertificate({
      serialNumber,
      issuer: ca.subject,
      subject: fitsCommonName ? commonNameOnly(host) : EMPTY_NAME,
      notBefore: validity.notBefore,
      notAfter: validity.notAfter,
      subjectPublicKeyInfo: spki,
      extensions: leafExtensions({ name, keyType, leafPublicKeyBits, caKeyIdentifier: ca.keyIdentifier, emptySubject: !fitsCommonName })
    }, await ca.signingKey)
    // An encoding that does not read back is a failed mint too.
    readCertificateFields(der)
  } catch {
    der = null
  }
  if (der === null) throw new ForwardProxyCertificateError('mint_failed', `signing the leaf certificate for ${host} failed`)
  return { cert: derToPem(der, 'CERTIFICATE'), serialNumber: Buffer.from(serialNumber).toString('hex').toUpperCase() }
}

/**
 * Mints a leaf for `host` signed by `ca`, and builds its secure context once: the leaf, then
 * the CA chain, with the leaf's key.
 * @throws ForwardProxyCertificateError (`invalid_host`, `mint_failed`).
 */
export async function mintLeaf (ca: CertificateAuthority, host: string, keyPair: LeafKeyPair, validity: LeafValidity): Promise<ForwardProxyIssuedLeaf> {
  const { cert, serialNumber } = await signLeaf(ca, host, keyPair.spki, keyPair.type, validity)
  return {
    host,
    cert,
    key: keyPair.privateKeyPem,
    chain: ca.chainPem,
    serialNumber,
    notBefore: validity.notBefore,
    notAfter: validity.notAfter,
    secureContext: createSecureContext({ cert: cert + ca.chainPem, key: keyPair.privateKeyPem })
  }
}

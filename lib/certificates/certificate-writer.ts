// X.509 v3 certificates written and signed without PKI.js (RFC 5280 4.1): the fields in DER
// through ./der-writer, the signature by WebCrypto with a non-extractable key.

import { webcrypto } from 'node:crypto'
import {
  derBitString,
  derContext,
  derNull,
  derObjectIdentifier,
  derOctetString,
  derSequence,
  derSet,
  derSmallInteger,
  derTime,
  derTrue,
  derUnsignedInteger,
  derUtf8String
} from './der-writer'

/** Digest a certificate signature uses. */
export type SignatureHash = 'SHA-256' | 'SHA-384' | 'SHA-512'

/** A private key that signs certificates: non-extractable WebCrypto, RSASSA-PKCS1-v1_5 or ECDSA. */
export interface CertificateSigningKey {
  readonly privateKey: webcrypto.CryptoKey
  readonly hash: SignatureHash
}

/** One extension: its object identifier, whether it is critical, and its extnValue's content (DER). */
export interface CertificateExtension {
  readonly oid: string
  readonly critical: boolean
  readonly value: Uint8Array
}

/** The fields of a certificate to be signed. */
export interface CertificateContent {
  /** Serial number, big-endian magnitude (positive). */
  readonly serialNumber: Uint8Array
  /** The issuer Name, whole DER (the signing CA's subject, byte for byte). */
  readonly issuer: Uint8Array
  /** The subject Name, whole DER. */
  readonly subject: Uint8Array
  readonly notBefore: Date
  readonly notAfter: Date
  /** The SubjectPublicKeyInfo, whole DER. */
  readonly subjectPublicKeyInfo: Uint8Array
  readonly extensions: readonly CertificateExtension[]
}

const COMMON_NAME = '2.5.4.3'

/** A Name with one attribute, commonName, as a UTF8String. */
export function commonNameOnly (commonName: string): Buffer {
  return derSequence(derSet(derSequence(derObjectIdentifier(COMMON_NAME), derUtf8String(commonName))))
}

/** An empty Name (RDNSequence): the subject of a leaf whose host is too long for a common name. */
export const EMPTY_NAME: Buffer = derSequence()

const RSA_SIGNATURE_OID: Readonly<Record<SignatureHash, string>> = {
  'SHA-256': '1.2.840.113549.1.1.11',
  'SHA-384': '1.2.840.113549.1.1.12',
  'SHA-512': '1.2.840.113549.1.1.13'
}

const ECDSA_SIGNATURE_OID: Readonly<Record<SignatureHash, string>> = {
  'SHA-256': '1.2.840.10045.4.3.2',
  'SHA-384': '1.2.840.10045.4.3.3',
  'SHA-512': '1.2.840.10045.4.3.4'
}

/**
 * Writes the certificate and signs it with `key`. Resolves with its DER.
 * @throws Error when WebCrypto cannot sign with the key (the caller turns it into its own error).
 */
export async function signCertificate (content: CertificateContent, key: CertificateSigningKey): Promise<Buffer> {
  const ecdsa = key.privateKey.algorithm.name === 'ECDSA'
  // RFC 5758 3.2: ECDSA's AlgorithmIdentifier has no parameters; RFC 4055 5: RSA's are NULL.
  const signatureAlgorithm = ecdsa
    ? derSequence(derObjectIdentifier(ECDSA_SIGNATURE_OID[key.hash]))
    : derSequence(derObjectIdentifier(RSA_SIGNATURE_OID[key.hash]), derNull())
  const tbsCertificate = derSequence(
    derContext(0, true, derSmallInteger(2)), // v3
    derUnsignedInteger(content.serialNumber),
    signatureAlgorithm,
    content.issuer,
    derSequence(derTime(content.notBefore), derTime(content.notAfter)),
    content.subject,
    content.subjectPublicKeyInfo,
    derContext(3, true, derSequence(...content.extensions.map(extensionElement)))
  )
  const signed = new Uint8Array(ecdsa
    ? await webcrypto.subtle.sign({ name: 'ECDSA', hash: key.hash }, key.privateKey, tbsCertificate)
    : await webcrypto.subtle.sign({ name: 'RSASSA-PKCS1-v1_5' }, key.privateKey, tbsCertificate))
  const signature = ecdsa ? ecdsaSignatureValue(signed) : signed
  return derSequence(tbsCertificate, signatureAlgorithm, derBitString(signature))
}

function extensionElement (extension: CertificateExtension): Buffer {
  return extension.critical
    ? derSequence(derObjectIdentifier(extension.oid), derTrue(), derOctetString(extension.value))
    : derSequence(derObjectIdentifier(extension.oid), derOctetString(extension.value))
}

/**
 * WebCrypto gives an ECDSA signature as r and s side by side, each the curve's size (IEEE
 * P1363); X.509 carries it as Ecdsa-Sig-Value, SEQUENCE { r INTEGER, s INTEGER } (RFC 3279 2.2.3).
 */
function ecdsaSignatureValue (rs: Uint8Array): Buffer {
  const half = rs.length / 2
  return derSequence(derUnsignedInteger(rs.subarray(0, half)), derUnsignedInteger(rs.subarray(half)))
}

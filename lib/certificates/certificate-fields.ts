// The fields of an X.509 certificate that the CA checks read (RFC 5280 4.1), straight from its DER.

import {
  DER_TAG,
  DerError,
  bitStringBits,
  childrenOf,
  contentOf,
  encodingOf,
  expectElement,
  objectIdentifierOf,
  timeOf,
  type DerElement
} from './der'

/** What the CA checks read from a certificate. Byte fields are views into the DER given. */
export interface CertificateFields {
  /** The subject Name, its whole DER encoding (copied as the issuer of every leaf). */
  readonly subject: Uint8Array
  /** Validity, milliseconds since the epoch. */
  readonly notBefore: number
  readonly notAfter: number
  /** The subjectPublicKey bits (without the unused-bits count), for RFC 5280 key identifiers. */
  readonly subjectPublicKeyBits: Uint8Array
  /** Each extension's extnValue content, by object identifier. */
  readonly extensions: ReadonlyMap<string, Uint8Array>
}

/**
 * Reads a DER certificate's subject, validity, public key bits and extensions.
 * @throws DerError when the bytes are not a certificate of that shape.
 */
export function readCertificateFields (der: Uint8Array): CertificateFields {
  const certificate = expectElement(der, DER_TAG.sequence)
  const tbs = expectElement(der, DER_TAG.sequence, certificate.contentStart, certificate.end)
  const fields = childrenOf(tbs)
  // The version is optional ([0], absent for v1): the serial number comes first without it.
  const first = fields[0]?.tag === DER_TAG.context0 ? 1 : 0
  const validity = fields[first + 3]
  const subject = fields[first + 4]
  const publicKeyInfo = fields[first + 5]
  if (validity === undefined || subject?.tag !== DER_TAG.sequence || publicKeyInfo === undefined) throw new DerError('not an X.509 certificate')
  const [notBefore, notAfter] = childrenOf(validity)
  const publicKey = childrenOf(publicKeyInfo)[1]
  if (notBefore === undefined || notAfter === undefined || publicKey === undefined) throw new DerError('not an X.509 certificate')
  const extensionsField = fields.slice(first + 6).find((field) => field.tag === DER_TAG.context3)
  return {
    subject: encodingOf(subject),
    notBefore: timeOf(notBefore),
    notAfter: timeOf(notAfter),
    subjectPublicKeyBits: bitStringBits(publicKey),
    extensions: extensionsField === undefined ? new Map() : readExtensions(extensionsField)
  }
}

function readExtensions (field: DerElement): Map<string, Uint8Array> {
  const list = expectElement(field.bytes, DER_TAG.sequence, field.contentStart, field.end)
  const extensions = new Map<string, Uint8Array>()
  for (const extension of childrenOf(list)) {
    const parts = childrenOf(extension)
    const id = parts[0]
    const value = parts[parts.length - 1]
    if (id === undefined || value === undefined || value.tag !== DER_TAG.octetString) throw new DerError('malformed extension')
    extensions.set(objectIdentifierOf(id), contentOf(value))
  }
  return extensions
}

/** The subjectPublicKey bits of a DER SubjectPublicKeyInfo (for RFC 5280 key identifiers). @throws DerError */
export function subjectPublicKeyBitsOf (spki: Uint8Array): Uint8Array {
  const publicKey = childrenOf(expectElement(spki, DER_TAG.sequence))[1]
  if (publicKey === undefined) throw new DerError('not a SubjectPublicKeyInfo')
  return bitStringBits(publicKey)
}

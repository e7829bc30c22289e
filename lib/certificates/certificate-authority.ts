import { createHash, type X509Certificate } from 'node:crypto'
import { BitString, OctetString } from 'asn1js'
import { BasicConstraints, Certificate, type RelativeDistinguishedNames } from 'pkijs'
import { caKeyAlgorithm, importCaSigningKey, readCaPrivateKey, type CaSigningKey } from './ca-key'
import { ForwardProxyCertificateError } from './certificate-error'
import { readNameConstraints, type NameSubtrees } from './name-constraints'
import { parseCertificates, pemCertificateBlocks } from './pem'

const BASIC_CONSTRAINTS = '2.5.29.19'
const KEY_USAGE = '2.5.29.15'
const SUBJECT_KEY_IDENTIFIER = '2.5.29.14'
const KEY_CERT_SIGN = 0x04 // bit 5 of the first byte of keyUsage

/** The operator's CA, checked and ready to sign leaves. Holds no extractable key material. */
export interface CertificateAuthority {
  /** The CA's subject, copied byte for byte as the issuer of every leaf. */
  readonly subject: RelativeDistinguishedNames
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
  readonly signingKey: Promise<CaSigningKey>
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
  const parsed = Certificate.fromBER(ca.raw)
  checkIsCa(parsed)
  const notBefore = parsed.notBefore.value.getTime()
  const notAfter = parsed.notAfter.value.getTime()
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
    subject: parsed.subject,
    keyIdentifier: subjectKeyIdentifier(parsed),
    notBefore,
    notAfter,
    chainPem: blocks.map((block) => `${block}\n`).join(''),
    nameConstraints: chainNameConstraints(parsed, certificates.slice(1)),
    signingKey
  }
}

function checkIsCa (parsed: Certificate): void {
  // Read basicConstraints itself: Node's X509Certificate.ca also says false for a keyUsage
  // without keyCertSign, and each case deserves its own message.
  const basicConstraints = parsed.extensions?.find((extension) => extension.extnID === BASIC_CONSTRAINTS)?.parsedValue as unknown
  if (!(basicConstraints instanceof BasicConstraints) || !basicConstraints.cA) {
    throw new ForwardProxyCertificateError('bad_ca_certificate', 'the CA certificate is not a CA: it lacks basicConstraints with cA true')
  }
  const keyUsage = parsed.extensions?.find((extension) => extension.extnID === KEY_USAGE)?.parsedValue as unknown
  const firstByte = keyUsage instanceof BitString ? keyUsage.valueBlock.valueHexView[0] ?? 0 : 0
  if ((firstByte & KEY_CERT_SIGN) === 0) {
    throw new ForwardProxyCertificateError('bad_ca_certificate', 'the CA certificate may not sign certificates: its keyUsage lacks keyCertSign (or it has no keyUsage); issue it with "keyUsage = critical, keyCertSign, cRLSign"')
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

function chainNameConstraints (ca: Certificate, intermediates: readonly X509Certificate[]): NameSubtrees[] {
  return [ca, ...intermediates.map((certificate) => Certificate.fromBER(certificate.raw))]
    .map(readNameConstraints)
    .filter((constraints): constraints is NameSubtrees => constraints !== null)
}

function subjectKeyIdentifier (parsed: Certificate): Uint8Array {
  const extension = parsed.extensions?.find((candidate) => candidate.extnID === SUBJECT_KEY_IDENTIFIER)?.parsedValue as unknown
  if (extension instanceof OctetString && extension.valueBlock.valueHexView.byteLength > 0) {
    return new Uint8Array(extension.valueBlock.valueHexView)
  }
  // RFC 5280 4.2.1.2 method 1: SHA-1 of the subjectPublicKey bits.
  return new Uint8Array(createHash('sha1').update(parsed.subjectPublicKeyInfo.subjectPublicKey.valueBlock.valueHexView).digest())
}

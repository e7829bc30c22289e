import { createSecureContext } from 'node:tls'
import { fromBER, Integer, Utf8String } from 'asn1js'
import { AttributeTypeAndValue, Certificate, PublicKeyInfo, RelativeDistinguishedNames, Time } from 'pkijs'
import type { ForwardProxyIssuedLeaf, ForwardProxyLeafKeyType } from '../../types/certificates'
import type { CertificateAuthority } from './certificate-authority'
import { ForwardProxyCertificateError } from './certificate-error'
import { nodeCryptoEngine } from './crypto-engine'
import { leafExtensions } from './leaf-extensions'
import type { LeafKeyPair } from './leaf-keys'
import { leafName } from './leaf-name'
import type { LeafValidity } from './leaf-validity'
import { derToPem } from './pem'
import { randomSerialNumber } from './serial-number'

const COMMON_NAME = '2.5.4.3'
const UTC_TIME = 0
const GENERALIZED_TIME = 1
const UTC_TIME_END = Date.UTC(2050, 0, 1) // RFC 5280 4.1.2.5: UTCTime through 2049

/** A leaf certificate signed by the CA, without its private key. */
export interface SignedLeaf {
  /** The certificate (PEM). */
  readonly cert: string
  /** Serial number as upper-case hex. */
  readonly serialNumber: string
}

/**
 * Signs a leaf certificate for `host` over the public key `spki` (DER SubjectPublicKeyInfo)
 * with `ca` (subject CN = host, random serial, the leaf extensions), with PKI.js over WebCrypto. `keyType` picks the key usage bits.
 * Used by `mintLeaf` and by signers of requests whose private key lives elsewhere (EST).
 * @throws ForwardProxyCertificateError (`invalid_host`, `mint_failed`).
 */
export async function signLeaf (ca: CertificateAuthority, host: string, spki: Uint8Array, keyType: ForwardProxyLeafKeyType, validity: LeafValidity): Promise<SignedLeaf> {
  const name = leafName(host)
  const publicKeyInfo = PublicKeyInfo.fromBER(spki)
  const serial = randomSerialNumber()
  const certificate = new Certificate({
    version: 2,
    serialNumber: new Integer({ valueHex: serial }),
    issuer: ca.subject,
    subject: new RelativeDistinguishedNames({
      typesAndValues: [new AttributeTypeAndValue({ type: COMMON_NAME, value: new Utf8String({ value: host }) })]
    }),
    notBefore: x509Time(validity.notBefore),
    notAfter: x509Time(validity.notAfter),
    subjectPublicKeyInfo: publicKeyInfo,
    extensions: leafExtensions({
      name,
      keyType,
      leafPublicKeyBits: publicKeyInfo.subjectPublicKey.valueBlock.valueHexView,
      caKeyIdentifier: ca.keyIdentifier
    })
  })
  let der: ArrayBuffer
  try {
    const signingKey = await ca.signingKey
    await certificate.sign(signingKey.privateKey as unknown as CryptoKeyOf<typeof certificate.sign>, signingKey.hash, nodeCryptoEngine)
    der = certificate.toSchema(true).toBER(false)
    if (fromBER(der).offset === -1) throw new Error('encoding')
  } catch {
    throw new ForwardProxyCertificateError('mint_failed', `signing the leaf certificate for ${host} failed`)
  }
  return { cert: derToPem(new Uint8Array(der), 'CERTIFICATE'), serialNumber: Buffer.from(serial).toString('hex').toUpperCase() }
}

/**
 * Mints a leaf for `host` signed by `ca` with PKI.js over WebCrypto, and
 * builds its secure context once: the leaf, then the CA chain, with the leaf's key.
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

type CryptoKeyOf<F> = F extends (key: infer K, ...rest: never[]) => unknown ? K : never

function x509Time (date: Date): Time {
  return new Time({ type: date.getTime() < UTC_TIME_END ? UTC_TIME : GENERALIZED_TIME, value: date })
}

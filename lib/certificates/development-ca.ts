import { createHash, webcrypto } from 'node:crypto'
import { hostname as osHostname } from 'node:os'
import { BitString, Integer, OctetString, Utf8String } from 'asn1js'
import { AttributeTypeAndValue, AuthorityKeyIdentifier, BasicConstraints, Certificate, Extension, PublicKeyInfo, RelativeDistinguishedNames, Time } from 'pkijs'
import { nodeCryptoEngine } from './crypto-engine'
import { EXTENSION_OID } from './leaf-extensions'
import { derToPem } from './pem'
import { randomSerialNumber } from './serial-number'

const COMMON_NAME = '2.5.4.3'
const MINUTE_MS = 60_000
const UTC_TIME_END = Date.UTC(2050, 0, 1) // RFC 5280 4.1.2.5: UTCTime through 2049

/** Defaults of {@link mintDevelopmentCa}. */
export const DEVELOPMENT_CA_DEFAULTS = {
  /** How far in the past the CA's validity starts, for clocks slightly behind (ms). */
  backdateMs: 5 * MINUTE_MS,
  /** How long the CA is valid from `now` (ms): one year. */
  lifetimeMs: 365 * 24 * 60 * MINUTE_MS
} as const

/** What {@link mintDevelopmentCa} needs; every field has a default. */
export interface DevelopmentCaOptions {
  /** Milliseconds since the epoch taken as now (default `Date.now()`). */
  readonly now?: number
  /** Machine name shown in the CA's common name (default `os.hostname()`). */
  readonly hostname?: string
  /** Validity from `now` in milliseconds (default one year). */
  readonly lifetimeMs?: number
}

/** A freshly minted development CA, PEM. `key` is the private key: never log it. */
export interface DevelopmentCaMaterial {
  /** The self-signed CA certificate. */
  readonly cert: string
  /** The unencrypted PKCS#8 private key (`-----BEGIN PRIVATE KEY-----`). */
  readonly key: string
  /** The certificate's common name. */
  readonly commonName: string
  readonly notBefore: Date
  readonly notAfter: Date
}

/**
 * Mints a self-signed development CA with PKI.js over Node's WebCrypto: an ECDSA P-256 key,
 * basicConstraints cA true with pathLen 0 (critical), keyUsage keyCertSign and cRLSign
 * (critical), subject and authority key identifiers, a random positive serial, and a common
 * name saying what it is (`fastify-forward-proxy development CA (<host>, <date>)`). Valid from
 * five minutes before `now` for a year.
 *
 * For development only: the key is returned as PEM so it can be stored; whoever holds it can
 * impersonate any site to clients that trust the certificate.
 */
export async function mintDevelopmentCa (options: DevelopmentCaOptions = {}): Promise<DevelopmentCaMaterial> {
  const now = options.now ?? Date.now()
  const notBefore = new Date(now - DEVELOPMENT_CA_DEFAULTS.backdateMs)
  const notAfter = new Date(now + (options.lifetimeMs ?? DEVELOPMENT_CA_DEFAULTS.lifetimeMs))
  const commonName = `fastify-forward-proxy development CA (${options.hostname ?? osHostname()}, ${new Date(now).toISOString().slice(0, 10)})`

  const keys = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify'])
  const publicKeyInfo = PublicKeyInfo.fromBER(await webcrypto.subtle.exportKey('spki', keys.publicKey))
  const keyIdentifier = createHash('sha1').update(publicKeyInfo.subjectPublicKey.valueBlock.valueHexView).digest()
  const name = new RelativeDistinguishedNames({
    typesAndValues: [new AttributeTypeAndValue({ type: COMMON_NAME, value: new Utf8String({ value: commonName }) })]
  })
  const certificate = new Certificate({
    version: 2,
    serialNumber: new Integer({ valueHex: randomSerialNumber() }),
    issuer: name,
    subject: name,
    notBefore: x509Time(notBefore),
    notAfter: x509Time(notAfter),
    subjectPublicKeyInfo: publicKeyInfo,
    extensions: caExtensions(keyIdentifier)
  })
  await certificate.sign(keys.privateKey as unknown as CryptoKeyOf<typeof certificate.sign>, 'SHA-256', nodeCryptoEngine)
  const der = new Uint8Array(certificate.toSchema(true).toBER(false))
  const pkcs8 = new Uint8Array(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey))
  try {
    return { cert: derToPem(der, 'CERTIFICATE'), key: derToPem(pkcs8, 'PRIVATE KEY'), commonName, notBefore, notAfter }
  } finally {
    pkcs8.fill(0)
  }
}

/** basicConstraints (critical, cA, pathLen 0), keyUsage (critical), subject and authority key identifiers. */
function caExtensions (keyIdentifier: Uint8Array): Extension[] {
  const basicConstraints = new BasicConstraints({ cA: true, pathLenConstraint: 0 })
  // Named bits: keyCertSign is bit 5 (0x04), cRLSign bit 6 (0x02); bit 7 unused.
  const keyUsage = new BitString({ valueHex: new Uint8Array([0x06]), unusedBits: 1 })
  const subjectKeyIdentifier = new OctetString({ valueHex: keyIdentifier })
  const authorityKeyIdentifier = new AuthorityKeyIdentifier({ keyIdentifier: new OctetString({ valueHex: keyIdentifier }) })
  return [
    extension(EXTENSION_OID.basicConstraints, true, basicConstraints.toSchema(), basicConstraints),
    extension(EXTENSION_OID.keyUsage, true, keyUsage, keyUsage),
    extension(EXTENSION_OID.subjectKeyIdentifier, false, subjectKeyIdentifier, subjectKeyIdentifier),
    extension(EXTENSION_OID.authorityKeyIdentifier, false, authorityKeyIdentifier.toSchema(), authorityKeyIdentifier)
  ]
}

type CryptoKeyOf<F> = F extends (key: infer K, ...rest: never[]) => unknown ? K : never

function extension (extnID: string, critical: boolean, value: { toBER: (sizeOnly?: boolean) => ArrayBuffer }, parsedValue: unknown): Extension {
  return new Extension({ extnID, critical, extnValue: value.toBER(false), parsedValue })
}

function x509Time (date: Date): Time {
  return new Time({ type: date.getTime() < UTC_TIME_END ? 0 : 1, value: date })
}

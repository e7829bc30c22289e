import { createHash } from 'node:crypto'
import { BitString, OctetString } from 'asn1js'
import { AuthorityKeyIdentifier, BasicConstraints, Extension, ExtKeyUsage, GeneralName, GeneralNames } from 'pkijs'
import type { ForwardProxyLeafKeyType } from '../../types/certificates'
import type { LeafName } from './leaf-name'

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
export const SERVER_AUTH_OID = '1.3.6.1.5.5.7.3.1'

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
}

/**
 * The extensions of a leaf: basicConstraints cA false (critical); keyUsage
 * digitalSignature, plus keyEncipherment for RSA keys (critical); extKeyUsage serverAuth; one
 * subjectAltName (iPAddress for an IP host, else dNSName); authorityKeyIdentifier from the
 * CA; subjectKeyIdentifier (RFC 5280 method 1).
 */
export function leafExtensions (input: LeafExtensionInput): Extension[] {
  const basicConstraints = new BasicConstraints({ cA: false })
  // Named bits: digitalSignature is bit 0 (0x80), keyEncipherment bit 2 (0x20).
  const keyUsage = input.keyType === 'rsa-2048'
    ? new BitString({ valueHex: new Uint8Array([0xa0]), unusedBits: 5 })
    : new BitString({ valueHex: new Uint8Array([0x80]), unusedBits: 7 })
  const extKeyUsage = new ExtKeyUsage({ keyPurposes: [SERVER_AUTH_OID] })
  const subjectAltName = new GeneralNames({ names: [generalName(input.name)] })
  const authorityKeyIdentifier = new AuthorityKeyIdentifier({ keyIdentifier: new OctetString({ valueHex: input.caKeyIdentifier }) })
  const subjectKeyIdentifier = new OctetString({ valueHex: createHash('sha1').update(input.leafPublicKeyBits).digest() })
  return [
    extension(EXTENSION_OID.basicConstraints, true, basicConstraints.toSchema(), basicConstraints),
    extension(EXTENSION_OID.keyUsage, true, keyUsage, keyUsage),
    extension(EXTENSION_OID.extKeyUsage, false, extKeyUsage.toSchema(), extKeyUsage),
    extension(EXTENSION_OID.subjectAltName, false, subjectAltName.toSchema(), subjectAltName),
    extension(EXTENSION_OID.authorityKeyIdentifier, false, authorityKeyIdentifier.toSchema(), authorityKeyIdentifier),
    extension(EXTENSION_OID.subjectKeyIdentifier, false, subjectKeyIdentifier, subjectKeyIdentifier)
  ]
}

function generalName (name: LeafName): GeneralName {
  return name.type === 'ip'
    ? new GeneralName({ type: GENERAL_NAME_IP, value: new OctetString({ valueHex: name.bytes }) })
    : new GeneralName({ type: GENERAL_NAME_DNS, value: name.name })
}

function extension (extnID: string, critical: boolean, value: { toBER: (sizeOnly?: boolean) => ArrayBuffer }, parsedValue: unknown): Extension {
  return new Extension({ extnID, critical, extnValue: value.toBER(false), parsedValue })
}

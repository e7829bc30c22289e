import { createPrivateKey, webcrypto } from 'node:crypto'
import { OctetString, Utf8String } from 'asn1js'
import { Attribute, AttributeTypeAndValue, CertificationRequest, Extension, Extensions, GeneralName, GeneralNames, PublicKeyInfo, RelativeDistinguishedNames } from 'pkijs'
import { nodeCryptoEngine } from './crypto-engine'
import { EXTENSION_OID } from './leaf-extensions'
import type { LeafKeyPair } from './leaf-keys'
import { leafName, type LeafName } from './leaf-name'

const COMMON_NAME = '2.5.4.3'
/** PKCS#9 extensionRequest (RFC 2985 5.4.2). */
export const EXTENSION_REQUEST_OID = '1.2.840.113549.1.9.14'
const GENERAL_NAME_DNS = 2
const GENERAL_NAME_IP = 7

/**
 * A PKCS#10 certification request (DER) for `host` over `keyPair`, signed with it (SHA-256):
 * subject CN = host, and an extensionRequest with one subjectAltName, an iPAddress for an IP
 * host, else a dNSName.
 * @throws ForwardProxyCertificateError (`invalid_host`) for a host no leaf may name.
 */
export async function certificationRequest (host: string, keyPair: LeafKeyPair): Promise<Buffer> {
  const name = leafName(host)
  const subjectAltName = new GeneralNames({ names: [generalName(name)] })
  const request = new CertificationRequest({
    version: 0,
    subject: new RelativeDistinguishedNames({
      typesAndValues: [new AttributeTypeAndValue({ type: COMMON_NAME, value: new Utf8String({ value: host }) })]
    }),
    subjectPublicKeyInfo: PublicKeyInfo.fromBER(keyPair.spki),
    attributes: [new Attribute({
      type: EXTENSION_REQUEST_OID,
      values: [new Extensions({
        extensions: [new Extension({ extnID: EXTENSION_OID.subjectAltName, critical: false, extnValue: subjectAltName.toSchema().toBER(false) })]
      }).toSchema()]
    })]
  })
  const pkcs8 = createPrivateKey(keyPair.privateKeyPem).export({ type: 'pkcs8', format: 'der' })
  try {
    const algorithm = keyPair.type === 'rsa-2048'
      ? { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }
      : { name: 'ECDSA', namedCurve: 'P-256' }
    const privateKey = await webcrypto.subtle.importKey('pkcs8', pkcs8, algorithm, false, ['sign'])
    await request.sign(privateKey as unknown as Parameters<typeof request.sign>[0], 'SHA-256', nodeCryptoEngine)
  } finally {
    pkcs8.fill(0)
  }
  return Buffer.from(request.toSchema().toBER(false))
}

function generalName (name: LeafName): GeneralName {
  return name.type === 'ip'
    ? new GeneralName({ type: GENERAL_NAME_IP, value: new OctetString({ valueHex: name.bytes }) })
    : new GeneralName({ type: GENERAL_NAME_DNS, value: name.name })
}

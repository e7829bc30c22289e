import { createPublicKey } from 'node:crypto'
import type { OctetString } from 'asn1js'
import { AltName, CertificationRequest, Extensions } from 'pkijs'
import type { ForwardProxyLeafKeyType } from '../../types/certificates'
import { EXTENSION_OID } from '../../lib/certificates/leaf'
import { nodeCryptoEngine } from '../../lib/certificates/pki-library'
import { EXTENSION_REQUEST_OID } from '../../lib/certificates/est-client'

const GENERAL_NAME_DNS = 2
const GENERAL_NAME_IP = 7

/** What the service takes from a PKCS#10 request it accepted. */
export interface AcceptedRequest {
  /** The one host the request asks for (its subjectAltName, which the CN must match if present). */
  readonly host: string
  /** The requester's public key (DER SubjectPublicKeyInfo). */
  readonly spki: Uint8Array
  readonly keyType: ForwardProxyLeafKeyType
}

/** A request the service will not sign; `message` is safe to send back. */
export class RequestRefused extends Error {
  constructor (readonly status: number, message: string) {
    super(message)
  }
}

/**
 * Reads a DER PKCS#10 request: its self-signature must verify (proof of possession), it must
 * ask for exactly one subjectAltName (dNSName or iPAddress) in an extensionRequest, and its key
 * must be ECDSA P-256 or RSA of 2048 bits or more.
 * @throws RequestRefused (400) otherwise.
 */
export async function acceptRequest (der: Uint8Array): Promise<AcceptedRequest> {
  let request: CertificationRequest
  try {
    request = CertificationRequest.fromBER(der)
  } catch {
    throw new RequestRefused(400, 'the body is not a DER PKCS#10 request')
  }
  if (!await request.verify(nodeCryptoEngine()).catch(() => false)) throw new RequestRefused(400, 'the request signature does not verify')
  const names = requestedNames(request)
  const host = names[0]
  if (names.length !== 1 || host === undefined || host === '') throw new RequestRefused(400, 'the request must carry exactly one subjectAltName (dNSName or iPAddress)')
  const cn = request.subject.typesAndValues.find((entry) => entry.type === '2.5.4.3')?.value.valueBlock.value as unknown
  if (cn !== undefined && String(cn) !== host) throw new RequestRefused(400, 'the request subject CN differs from its subjectAltName')
  const spki = new Uint8Array(request.subjectPublicKeyInfo.toSchema().toBER(false))
  return { host, spki, keyType: keyTypeOf(spki) }
}

function requestedNames (request: CertificationRequest): string[] {
  const attribute = request.attributes?.find((candidate) => candidate.type === EXTENSION_REQUEST_OID)
  const value = attribute?.values[0]
  if (value === undefined) return []
  const extension = new Extensions({ schema: value }).extensions.find((candidate) => candidate.extnID === EXTENSION_OID.subjectAltName)
  const altName = extension?.parsedValue as unknown
  if (!(altName instanceof AltName)) return []
  // Every name counts, of whatever type: one the service cannot read (an email, a URI, an IP of
  // odd length) is kept as '' so that a request for it besides a DNS name is still refused.
  return altName.altNames.map((name) => {
    if (name.type === GENERAL_NAME_DNS) return String(name.value)
    if (name.type === GENERAL_NAME_IP) return ipText(new Uint8Array((name.value as OctetString).valueBlock.valueHexView))
    return ''
  })
}

function ipText (bytes: Uint8Array): string {
  if (bytes.length === 4) return Array.from(bytes).join('.')
  if (bytes.length !== 16) return ''
  const groups = Array.from({ length: 8 }, (_, index) => ((bytes[index * 2] ?? 0) * 256 + (bytes[index * 2 + 1] ?? 0)).toString(16))
  return new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1)
}

function keyTypeOf (spki: Uint8Array): ForwardProxyLeafKeyType {
  const key = createPublicKey({ key: Buffer.from(spki), format: 'der', type: 'spki' })
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ecdsa-p256'
  if (key.asymmetricKeyType === 'rsa' && (key.asymmetricKeyDetails?.modulusLength ?? 0) >= 2048) return 'rsa-2048'
  throw new RequestRefused(400, 'the request key must be ECDSA P-256 or RSA of at least 2048 bits')
}

import { X509Certificate } from 'node:crypto'
import { Certificate, ContentInfo, EncapsulatedContentInfo, SignedData } from 'pkijs'

const SIGNED_DATA = '1.2.840.113549.1.7.2'
const DATA = '1.2.840.113549.1.7.1'

/**
 * Decodes an EST body (RFC 7030 4.1.3, RFC 8951): base64, possibly with line breaks, whatever
 * Content-Transfer-Encoding says. Null when it is not base64.
 */
export function decodeEstBase64 (body: Buffer): Buffer | null {
  const text = body.toString('latin1').replace(/[\r\n\t ]+/g, '')
  if (text.length === 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return null
  return Buffer.from(text, 'base64')
}

/**
 * The certificates of a PKCS#7 / CMS SignedData "certs-only" message (DER), parsed by Node.
 * Null when the bytes are not such a message or a certificate does not parse.
 */
export function certificatesOfPkcs7 (der: Uint8Array): X509Certificate[] | null {
  try {
    const contentInfo = ContentInfo.fromBER(der)
    if (contentInfo.contentType !== SIGNED_DATA) return null
    const signedData = new SignedData({ schema: contentInfo.content })
    const certificates = (signedData.certificates ?? []).filter((item): item is Certificate => item instanceof Certificate)
    return certificates.map((certificate) => new X509Certificate(Buffer.from(certificate.toSchema(true).toBER(false))))
  } catch {
    return null
  }
}

/** A PKCS#7 / CMS SignedData "certs-only" message (DER) holding `certificates` (DER each). */
export function certsOnlyPkcs7 (certificates: readonly Uint8Array[]): Buffer {
  const signedData = new SignedData({
    version: 1,
    encapContentInfo: new EncapsulatedContentInfo({ eContentType: DATA }),
    certificates: certificates.map((der) => Certificate.fromBER(der)),
    signerInfos: []
  })
  const contentInfo = new ContentInfo({ contentType: SIGNED_DATA, content: signedData.toSchema(true) })
  return Buffer.from(contentInfo.toSchema().toBER(false))
}

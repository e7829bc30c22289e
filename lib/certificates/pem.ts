import { X509Certificate } from 'node:crypto'

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g

/** The PEM certificate blocks of `text`, in order. */
export function pemCertificateBlocks (text: string): string[] {
  return text.match(CERTIFICATE_BLOCK) ?? []
}

/** Encodes DER bytes as a PEM block of `label`, 64 characters a line. */
export function derToPem (der: Uint8Array, label: string): string {
  const base64 = Buffer.from(der.buffer, der.byteOffset, der.byteLength).toString('base64')
  const lines = base64.match(/.{1,64}/g) ?? []
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`
}

/** Parses PEM certificate blocks with Node; null when one does not parse. */
export function parseCertificates (blocks: readonly string[]): X509Certificate[] | null {
  try {
    return blocks.map((block) => new X509Certificate(block))
  } catch {
    return null
  }
}

// PEM text and private key files, without the certificate libraries (loaded only where interception
// is configured).

import { X509Certificate } from 'node:crypto'
import { statSync } from 'node:fs'

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

/**
 * The permission bits (`mode & 0o777`) of a private key file when group or others may read,
 * write or run it (ssh's rule for private keys), or undefined when only its owner may. Always
 * undefined on Windows, which reports no POSIX permission bits (its ACLs are not checked).
 * @throws the `statSync` error (ENOENT, EACCES) when the file cannot be examined.
 */
export function tooOpenKeyFileMode (path: string): number | undefined {
  if (process.platform === 'win32') return undefined
  const mode = statSync(path).mode & 0o777
  return (mode & 0o077) === 0 ? undefined : mode
}

/** A mode as the four octal digits `chmod` takes, e.g. `0644`. */
export function octalMode (mode: number): string {
  return mode.toString(8).padStart(4, '0')
}

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

/** True when `pem` holds at least one PEM certificate block and every one of them parses. */
export function holdsCertificates (pem: string | Buffer): boolean {
  const blocks = pemCertificateBlocks(typeof pem === 'string' ? pem : pem.toString('latin1'))
  return blocks.length > 0 && parseCertificates(blocks) !== null
}

/**
 * What the permission rule for private key and secret files allows, for messages: the owner, and
 * the file's group when the proxy's user is in it (a Kubernetes Secret mounted with `fsGroup`).
 */
export const KEY_FILE_RULE = "it may be readable by the proxy's user, and by the file's group only when the proxy's user is in that group (modes 0600, 0400, 0640, 0440), by nobody else"

/** A private key or secret file that {@link tooOpenKeyFile} refuses: its mode and why. */
export interface TooOpenKeyFile {
  /** The permission bits, `mode & 0o777`. */
  readonly mode: number
  /** Why, in words that follow "are too open: ", e.g. `others may read it`. */
  readonly reason: string
}

/**
 * The permission rule for files holding a private key or a secret (ssh's rule for private keys,
 * widened to the group kubelet gives a Secret mounted with `fsGroup`): no bit for others; for the
 * group, reading only, and only when the file's group is one of the process's groups (a group
 * the proxy was put in on purpose, as kubelet does with `fsGroup`; a group the operator chose
 * for the file but not for the proxy says the file was meant for others). Undefined when the
 * file passes; always on Windows, which reports no POSIX permission bits (its ACLs are not
 * checked).
 * @throws the `statSync` error (ENOENT, EACCES) when the file cannot be examined.
 */
export function tooOpenKeyFile (path: string): TooOpenKeyFile | undefined {
  if (process.platform === 'win32') return undefined
  const stats = statSync(path)
  const mode = stats.mode & 0o777
  if ((mode & 0o007) !== 0) return { mode, reason: 'others may read, write or run it' }
  if ((mode & 0o030) !== 0) return { mode, reason: 'its group may write or run it' }
  if ((mode & 0o040) !== 0) {
    const groups = processGroups()
    if (!groups.includes(stats.gid)) {
      return { mode, reason: `its group (gid ${stats.gid}) may read it, and the proxy's user is not in that group (gids ${groups.join(', ')})` }
    }
  }
  return undefined
}

/** The groups whose files the process reads by group: its supplementary groups and effective group. */
function processGroups (): number[] {
  const groups = new Set(process.getgroups?.() ?? [])
  const effective = process.getegid?.()
  if (effective !== undefined) groups.add(effective)
  return [...groups]
}

/** A mode as the four octal digits `chmod` takes, e.g. `0644`. */
export function octalMode (mode: number): string {
  return mode.toString(8).padStart(4, '0')
}

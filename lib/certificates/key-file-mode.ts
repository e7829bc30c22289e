import { statSync } from 'node:fs'

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

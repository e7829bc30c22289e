import { createHash, timingSafeEqual } from 'node:crypto'

/**
 * Compares two secrets in time that depends on neither their contents nor their lengths:
 * both are hashed to fixed-size digests first, then compared with `crypto.timingSafeEqual`.
 */
export function timingSafeEqualText (given: string, expected: string): boolean {
  const a = createHash('sha256').update(given, 'utf8').digest()
  const b = createHash('sha256').update(expected, 'utf8').digest()
  return timingSafeEqual(a, b)
}

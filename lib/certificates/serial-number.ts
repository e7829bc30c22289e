import { randomFillSync } from 'node:crypto'

const SERIAL_BYTES = 16

/**
 * A random positive serial number of 16 bytes (127 bits of randomness), as DER INTEGER
 * content bytes: the high bit is cleared so it is positive, and the first byte is never zero
 * so the encoding stays minimal and the value non-zero (CA/B BR 7.1: at least 64 random bits).
 */
export function randomSerialNumber (): Uint8Array {
  const bytes = new Uint8Array(SERIAL_BYTES)
  do {
    randomFillSync(bytes)
    bytes[0] = (bytes[0] ?? 0) & 0x7f
  } while (bytes[0] === 0)
  return bytes
}

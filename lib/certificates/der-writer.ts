// A writer of DER (X.690 distinguished encoding), enough to build and sign X.509 certificates
// without PKI.js: each function returns one whole element, tag and length included.

import { DER_TAG } from './der'

/** One element: `tag`, the definite length of `content` (short form below 128), then `content`. */
export function derElement (tag: number, ...content: readonly Uint8Array[]): Buffer {
  let length = 0
  for (const part of content) length += part.length
  const lengthBytes: number[] = []
  if (length < 0x80) {
    lengthBytes.push(length)
  } else {
    for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) lengthBytes.unshift(rest % 256)
    lengthBytes.unshift(0x80 | lengthBytes.length)
  }
  return Buffer.concat([Uint8Array.of(tag, ...lengthBytes), ...content])
}

/** A SET of `elements`, which the caller gives in DER's order (one element needs none). */
export function derSet (...elements: readonly Uint8Array[]): Buffer {
  return derElement(DER_TAG.set, ...elements)
}

/** A SEQUENCE of `elements`. */
export function derSequence (...elements: readonly Uint8Array[]): Buffer {
  return derElement(DER_TAG.sequence, ...elements)
}

/**
 * A non-negative INTEGER from its big-endian magnitude: leading zero bytes dropped, and one
 * zero byte put back in front when the first remaining byte has its high bit set, as DER's
 * minimal two's-complement form requires.
 */
export function derUnsignedInteger (magnitude: Uint8Array): Buffer {
  let start = 0
  while (start < magnitude.length - 1 && magnitude[start] === 0) start++
  const bytes = magnitude.subarray(start)
  const padded = (bytes[0] ?? 0) >= 0x80 || bytes.length === 0 ? [Uint8Array.of(0), bytes] : [bytes]
  return derElement(DER_TAG.integer, ...padded)
}

/** A small non-negative INTEGER (the certificate's version, a path length). */
export function derSmallInteger (value: number): Buffer {
  if (!Number.isInteger(value) || value < 0 || value > 0x7fff_ffff) throw new RangeError(`not a small non-negative integer: ${value}`)
  const bytes: number[] = []
  for (let rest = value; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256)
  return derUnsignedInteger(Uint8Array.from(bytes.length === 0 ? [0] : bytes))
}

/** BOOLEAN TRUE (DER writes FALSE by leaving out a field whose default it is). */
export function derTrue (): Buffer {
  return derElement(DER_TAG.boolean, Uint8Array.of(0xff))
}

/** NULL (the parameters of an RSA algorithm identifier). */
export function derNull (): Buffer {
  return derElement(DER_TAG.null)
}

/** An OBJECT IDENTIFIER from its dotted form (two arcs at least, the first 0, 1 or 2). */
export function derObjectIdentifier (dotted: string): Buffer {
  const arcs = dotted.split('.').map(Number)
  const [first, second, ...rest] = arcs
  if (first === undefined || second === undefined || first > 2 || arcs.some((arc) => !Number.isSafeInteger(arc) || arc < 0)) {
    throw new RangeError(`not an object identifier: ${dotted}`)
  }
  const bytes: number[] = []
  for (const arc of [first * 40 + second, ...rest]) {
    const base128 = [arc % 128]
    for (let high = Math.floor(arc / 128); high > 0; high = Math.floor(high / 128)) base128.unshift(0x80 | (high % 128))
    bytes.push(...base128)
  }
  return derElement(DER_TAG.objectIdentifier, Uint8Array.from(bytes))
}

/** An OCTET STRING holding `content`. */
export function derOctetString (content: Uint8Array): Buffer {
  return derElement(DER_TAG.octetString, content)
}

/** A BIT STRING of `bits`, whose last `unusedBits` (0 to 7) bits are padding. */
export function derBitString (bits: Uint8Array, unusedBits = 0): Buffer {
  return derElement(DER_TAG.bitString, Uint8Array.of(unusedBits), bits)
}

/** A UTF8String. */
export function derUtf8String (text: string): Buffer {
  return derElement(DER_TAG.utf8String, Buffer.from(text, 'utf8'))
}

const UTC_TIME_END = Date.UTC(2050, 0, 1)

/**
 * An X.509 time (RFC 5280 4.1.2.5), to the second in UTC: UTCTime through 2049,
 * GeneralizedTime from 2050.
 */
export function derTime (date: Date): Buffer {
  const iso = date.toISOString() // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = iso.slice(0, 19).replace(/[-T:]/g, '') + 'Z'
  return date.getTime() < UTC_TIME_END
    ? derElement(DER_TAG.utcTime, Buffer.from(digits.slice(2), 'latin1'))
    : derElement(DER_TAG.generalizedTime, Buffer.from(digits, 'latin1'))
}

/**
 * A context-specific element `[number]`: constructed (EXPLICIT, or IMPLICIT over a
 * constructed type) when `constructed`, else primitive (IMPLICIT over a primitive type).
 */
export function derContext (number: number, constructed: boolean, ...content: readonly Uint8Array[]): Buffer {
  return derElement(0x80 | (constructed ? 0x20 : 0) | number, ...content)
}

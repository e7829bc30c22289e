// A reader of DER (X.690 distinguished encoding), enough to check a CA certificate at start-up
// without loading PKI.js: elements, their children, object identifiers and X.509 times.

/** One DER element inside `bytes`: its tag byte and where its content lies. */
export interface DerElement {
  readonly bytes: Uint8Array
  readonly tag: number
  /** Offset of the element's first byte (its tag). */
  readonly start: number
  /** Offset of the first content byte. */
  readonly contentStart: number
  /** Offset just past the content (and the element). */
  readonly end: number
}

/**
 * Tag bytes this module's callers look for and ./der-writer writes (universal class, and the
 * context-specific ones of X.509).
 */
export const DER_TAG = {
  boolean: 0x01,
  integer: 0x02,
  bitString: 0x03,
  octetString: 0x04,
  null: 0x05,
  objectIdentifier: 0x06,
  utf8String: 0x0c,
  utcTime: 0x17,
  generalizedTime: 0x18,
  sequence: 0x30,
  set: 0x31,
  /** [0] constructed (the certificate's version, nameConstraints' permittedSubtrees). */
  context0: 0xa0,
  /** [1] constructed (nameConstraints' excludedSubtrees). */
  context1: 0xa1,
  /** [3] constructed (the certificate's extensions). */
  context3: 0xa3
} as const

/** Thrown for bytes that are not well-formed DER; callers turn it into their own error. */
export class DerError extends Error {}

/**
 * Reads the element starting at `offset`, which must end by `limit`. Only single-byte tags and
 * definite lengths of up to four bytes are accepted: DER certificates need nothing else.
 * @throws DerError for a truncated or malformed element.
 */
export function readElement (bytes: Uint8Array, offset = 0, limit = bytes.length): DerElement {
  const tag = bytes[offset]
  const first = bytes[offset + 1]
  if (tag === undefined || first === undefined || offset + 2 > limit) throw new DerError('truncated element')
  if ((tag & 0x1f) === 0x1f) throw new DerError('multi-byte tag')
  let length = first
  let contentStart = offset + 2
  if (first >= 0x80) {
    const count = first & 0x7f
    if (count === 0 || count > 4) throw new DerError('unsupported length')
    length = 0
    for (let index = 0; index < count; index++) {
      const byte = bytes[contentStart + index]
      if (byte === undefined) throw new DerError('truncated length')
      length = length * 256 + byte
    }
    contentStart += count
  }
  const end = contentStart + length
  if (end > limit) throw new DerError('element longer than its container')
  return { bytes, tag, start: offset, contentStart, end }
}

/** The elements inside a constructed element, in order. @throws DerError */
export function childrenOf (element: DerElement): DerElement[] {
  const children: DerElement[] = []
  for (let offset = element.contentStart; offset < element.end;) {
    const child = readElement(element.bytes, offset, element.end)
    children.push(child)
    offset = child.end
  }
  return children
}

/** Reads the element at `offset` and checks its tag. @throws DerError */
export function expectElement (bytes: Uint8Array, tag: number, offset = 0, limit = bytes.length): DerElement {
  const element = readElement(bytes, offset, limit)
  if (element.tag !== tag) throw new DerError(`expected tag 0x${tag.toString(16)}, found 0x${element.tag.toString(16)}`)
  return element
}

/** An element's content bytes (a view, not a copy). */
export function contentOf (element: DerElement): Uint8Array {
  return element.bytes.subarray(element.contentStart, element.end)
}

/** The whole element, tag and length included (a view). */
export function encodingOf (element: DerElement): Uint8Array {
  return element.bytes.subarray(element.start, element.end)
}

/** An OBJECT IDENTIFIER's dotted form. @throws DerError */
export function objectIdentifierOf (element: DerElement): string {
  if (element.tag !== DER_TAG.objectIdentifier) throw new DerError('expected an object identifier')
  const content = contentOf(element)
  const arcs: number[] = []
  let value = 0
  for (const byte of content) {
    value = value * 128 + (byte & 0x7f)
    if ((byte & 0x80) !== 0) continue
    if (arcs.length === 0) arcs.push(value < 80 ? Math.floor(value / 40) : 2, value < 80 ? value % 40 : value - 80)
    else arcs.push(value)
    value = 0
  }
  if (content.length === 0 || ((content[content.length - 1] ?? 0) & 0x80) !== 0) throw new DerError('truncated object identifier')
  return arcs.join('.')
}

/** A BIT STRING's bits (without the unused-bits count byte). @throws DerError */
export function bitStringBits (element: DerElement): Uint8Array {
  if (element.tag !== DER_TAG.bitString || element.end === element.contentStart) throw new DerError('expected a bit string')
  return element.bytes.subarray(element.contentStart + 1, element.end)
}

/** An X.509 time (UTCTime, 1950 to 2049, or GeneralizedTime) in milliseconds since the epoch. @throws DerError */
export function timeOf (element: DerElement): number {
  const text = String.fromCharCode(...contentOf(element))
  const match = element.tag === DER_TAG.utcTime
    ? /^(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(text)
    : element.tag === DER_TAG.generalizedTime ? /^(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(text) : null
  if (match === null) throw new DerError('expected a UTCTime or GeneralizedTime in Z form')
  const [year, month, day, hour, minute, second] = match.slice(1).map(Number) as [number, number, number, number, number, number]
  const fullYear = element.tag === DER_TAG.utcTime ? (year < 50 ? 2000 + year : 1900 + year) : year
  return Date.UTC(fullYear, month - 1, day, hour, minute, second)
}

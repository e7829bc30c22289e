/** Header field values as the transform contracts hold them. */
export type HeaderRecord = Record<string, string | string[]>

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
// What Node accepts in a field value: tab, visible ASCII, space and obs-text bytes. Anything else
// (line breaks for header injection, NUL, other controls, DEL, characters past U+00FF) would make
// Node refuse the message after the transform, failing the request for a reason nobody can see.
const UNSAFE_VALUE = /[^\t\x20-\x7e\x80-\xff]/

/**
 * Returns the first header a transform left unusable (a name that is not a lower-case token,
 * a value that is not a string or holds a character Node refuses in a field value (CR, LF, NUL,
 * other controls, DEL, anything past U+00FF), or one of `refused`), or null when all are fine.
 */
export function invalidHeader (headers: HeaderRecord, refused: ReadonlySet<string>): string | null {
  if (typeof headers !== 'object' || headers === null) return 'headers'
  for (const [name, value] of Object.entries(headers)) {
    if (!TOKEN.test(name) || name !== name.toLowerCase() || refused.has(name)) return name
    const values: unknown[] = Array.isArray(value) ? value : [value]
    if (values.some((item) => typeof item !== 'string' || UNSAFE_VALUE.test(item))) return name
  }
  return null
}

/**
 * Builds a header record (lower-case names, repeats as arrays) from flat name/value pairs. It has
 * no prototype, so a client's `constructor` or `__proto__` header is a header like any other.
 */
export function headerRecordOf (flat: readonly string[]): HeaderRecord {
  const record = Object.create(null) as HeaderRecord
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const name = (flat[i] as string).toLowerCase()
    const value = flat[i + 1] as string
    const existing = record[name]
    record[name] = existing === undefined ? value : [...(Array.isArray(existing) ? existing : [existing]), value]
  }
  return record
}

/**
 * A deep copy of a header record, so a transform's edits never reach the object it came from;
 * without a prototype, like {@link headerRecordOf}'s.
 */
export function copyHeaderRecord (headers: Readonly<Record<string, string | string[] | undefined>>): HeaderRecord {
  const copy = Object.create(null) as HeaderRecord
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) copy[name] = Array.isArray(value) ? [...value] : value
  }
  return copy
}

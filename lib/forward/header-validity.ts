/** Header field values as the transform contracts hold them. */
export type HeaderRecord = Record<string, string | string[]>

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
// No line breaks (header injection) and no NUL in a field value.
const UNSAFE_VALUE = /[\r\n\0]/

/**
 * Returns the first header a transform left unusable (a name that is not a lower-case token,
 * a value that is not a string or holds CR, LF or NUL, or one of `refused`), or null when all are fine.
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

/** Builds a header record (lower-case names, repeats as arrays) from flat name/value pairs. */
export function headerRecordOf (flat: readonly string[]): HeaderRecord {
  const record: HeaderRecord = {}
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const name = (flat[i] as string).toLowerCase()
    const value = flat[i + 1] as string
    const existing = record[name]
    record[name] = existing === undefined ? value : [...(Array.isArray(existing) ? existing : [existing]), value]
  }
  return record
}

/** A deep copy of a header record, so a transform's edits never reach the object it came from. */
export function copyHeaderRecord (headers: Readonly<Record<string, string | string[] | undefined>>): HeaderRecord {
  const copy: HeaderRecord = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) copy[name] = Array.isArray(value) ? [...value] : value
  }
  return copy
}

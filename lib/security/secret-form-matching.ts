// One secret form (secret-forms.ts) compiled for matching, and the matching itself: where a form
// written plain, in any letter case or with some characters escaped ends in some bytes, or that
// the bytes ran out before that could be told. secret-scrubber.ts indexes the forms and scans.

import { LONGEST_SPELLING, characterEscapes, escapedCharacterAt, type SecretForm } from './secret-forms'

/** No match here. */
export const NO = -1
/** The bytes ran out while a form could still match: decide once more arrive. */
export const PARTIAL = -2
const PERCENT = 0x25

/** A secret form ready for matching. */
export interface CompiledForm {
  /** `text`'s bytes; lower-cased when `anyCase`. */
  readonly codes: Uint8Array
  readonly anyCase: boolean
  /** Neither escapes nor case: compared byte for byte. */
  readonly exact: boolean
  /** Per byte of `codes`, how it may be written escaped. */
  readonly escapes: EscapeTable
  readonly secret: string
  readonly replacement: Buffer
}

/** Lower case of each byte: letters in a form that matches in any case are compared through it. */
const FOLD = Uint8Array.from({ length: 256 }, (_, code) => code >= 0x41 && code <= 0x5a ? code + 32 : code)
/** Upper case of each byte (a form's first letter is indexed in both cases). */
export const UPPER = Uint8Array.from({ length: 256 }, (_, code) => code >= 0x61 && code <= 0x7a ? code - 32 : code)
/** Every byte value: what may follow a first character that is the whole form. */
export const ALL_BYTES = Array.from({ length: 256 }, (_, code) => code)

/** Per byte of a form's (possibly lower-cased) text, how it may be written escaped. */
interface EscapeTable {
  /** The escapes, as lower-cased bytes (for where the bytes end inside one). */
  readonly byCode: ReadonlyArray<readonly Uint8Array[]>
  /** The longest way of writing each byte, itself included. */
  readonly longest: Uint8Array
}

function escapeTable (escaped: (code: number) => boolean, anyCase: boolean): EscapeTable {
  const escapesOf = (code: number): Uint8Array[] => escaped(code) ? characterEscapes(code).map((escape) => Buffer.from(escape, 'latin1')) : []
  // A lower-cased letter stands for both cases: `%52` and `%72` are both an "r".
  const byCode = Array.from({ length: 256 }, (_, code) => anyCase && code !== UPPER[code]
    ? [...escapesOf(code), ...escapesOf(UPPER[code] as number)]
    : escapesOf(code))
  return { byCode, longest: Uint8Array.from(byCode, (escapes) => Math.max(1, ...escapes.map((escape) => escape.length))) }
}

const isLetterOrDigit = (code: number): boolean => /[A-Za-z0-9]/.test(String.fromCharCode(code))
const ESCAPE_TABLES: Readonly<Record<SecretForm['escapes'], readonly [EscapeTable, EscapeTable]>> = {
  all: [escapeTable(() => true, false), escapeTable(() => true, true)],
  symbols: [escapeTable((code) => !isLetterOrDigit(code), false), escapeTable((code) => !isLetterOrDigit(code), true)],
  none: [escapeTable(() => false, false), escapeTable(() => false, true)]
}

/** Bytes that begin an escape (`%`, `\`, `&`): anywhere else only the character itself can match. */
export const ESCAPE_START = new Uint8Array(256)
for (const escapes of ESCAPE_TABLES.all[0].byCode) for (const escape of escapes) ESCAPE_START[escape[0] as number] = 1

/** Compiles `form` for matching: its bytes (lower-cased when it matches in any case) and escape table. */
export function compile (form: SecretForm): CompiledForm {
  // eslint-disable-next-line no-control-regex
  if (form.text.length === 0 || /[^\x00-\xff]/.test(form.text)) throw new TypeError(`a form of secret "${form.secret}" is empty or not Latin-1`)
  const codes = Buffer.from(form.text, 'latin1')
  return {
    codes: form.anyCase ? codes.map((code) => FOLD[code] as number) : codes,
    anyCase: form.anyCase,
    exact: form.escapes === 'none' && !form.anyCase,
    escapes: ESCAPE_TABLES[form.escapes][form.anyCase ? 1 : 0],
    secret: form.secret,
    replacement: Buffer.from(form.replacement, 'latin1')
  }
}

/** The ways character `k` of `form` may be written (the character itself first). */
export function spellings (form: CompiledForm, k: number): Uint8Array[] {
  const code = form.codes[k] as number
  return [Uint8Array.of(code), ...(form.escapes.byCode[code] as Uint8Array[])]
}

/** The bytes that may stand at `offset` of `spelling` of a character of `form`. */
export function variants (form: CompiledForm, spelling: Uint8Array, offset: number): number[] {
  const code = spelling[offset] as number
  // The character itself matches in either case only when the form says so; escapes always do.
  return (spelling.length > 1 || form.anyCase) && code !== UPPER[code] ? [code, UPPER[code] as number] : [code]
}

/** The bytes character `k` of `form` may start with. */
export function startBytes (form: CompiledForm, k: number): number[] {
  return [...new Set(spellings(form, k).flatMap((spelling) => variants(form, spelling, 0)))]
}

/** Where `form`, compared byte for byte (no escapes, no case), ends when it starts at `bytes[at]`; NO; or PARTIAL. */
export function matchExact (form: CompiledForm, bytes: Buffer, at: number, final: boolean): number {
  const { codes } = form
  for (let k = 0; k < codes.length; k++) {
    if (at + k >= bytes.length) return final ? NO : PARTIAL
    if (bytes[at + k] !== codes[k]) return NO
  }
  return at + codes.length
}

/**
 * Where the longest match of characters `k`… of `form` from `bytes[at]` ends; NO; or PARTIAL
 * when the bytes run out first and the stream goes on (`final` false). Where a character may be
 * read more than one way at the same place (only `%`, `\` and `&`, as themselves or escaped:
 * `%25` is `%` then `25`, or an escaped `%`; `%2525` is also a twice-escaped `%`), every way is
 * tried and the results of the rest are remembered in `tried`, so the work stays proportional to
 * the form's length.
 */
export function matchFrom (form: CompiledForm, bytes: Buffer, k: number, at: number, final: boolean, tried: Map<number, number> | null): number {
  const { codes, anyCase } = form
  const escapes = form.escapes.byCode
  const length = bytes.length
  let position = at
  for (let index = k; index < codes.length; index++) {
    if (position >= length) return final ? NO : PARTIAL
    const code = codes[index] as number
    const byte = bytes[position] as number
    const itself = anyCase ? FOLD[byte] === code : byte === code
    if (ESCAPE_START[byte] === 0) {
      if (!itself) return NO
      position++
      continue
    }
    const ways = escapes[code] as Uint8Array[]
    // Only where the bytes end inside an escape is reading it not enough.
    if (!final && position + LONGEST_SPELLING > length && ways.some((escape) => cutShort(escape, bytes, position))) return PARTIAL
    const decoded = ways.length === 0 ? NO : escapedCharacterAt(bytes, position)
    const escaped = decoded !== NO && (anyCase ? FOLD[decoded & 0xff] : decoded & 0xff) === code ? decoded >> 8 : NO
    if (!itself) {
      if (escaped === NO) return NO
      position += escaped
      continue
    }
    // A "%" may also open "%25hh", which reads as a twice-escaped "hh" but is an escaped "%" too.
    const twice = code === PERCENT && decoded >> 8 === 5 ? 3 : NO
    return matchEither(form, bytes, index, position, [1, escaped, twice], final, tried)
  }
  return position
}

/** Character `k` may be read at `bytes[at]` in each of `lengths` (NO for none): tries each. */
function matchEither (
  form: CompiledForm,
  bytes: Buffer,
  k: number,
  at: number,
  lengths: readonly number[],
  final: boolean,
  tried: Map<number, number> | null
): number {
  const memo = tried ?? new Map<number, number>()
  let best = NO
  for (const length of lengths) {
    if (length === NO) continue
    // Unique while k < 2^20 and at < 2^32.
    const key = (k + 1) * 0x100000000 + at + length
    let end = memo.get(key)
    if (end === undefined) {
      end = matchFrom(form, bytes, k + 1, at + length, final, memo)
      memo.set(key, end)
    }
    // Whatever it becomes, a match still open ends after any that is complete.
    if (end === PARTIAL) return PARTIAL
    if (end > best) best = end
  }
  return best
}

/** True when the bytes from `at` are all there is and begin `escape` without finishing it. */
function cutShort (escape: Uint8Array, bytes: Buffer, at: number): boolean {
  if (bytes.length - at >= escape.length) return false
  for (let offset = 0; at + offset < bytes.length; offset++) {
    if (FOLD[bytes[at + offset] as number] !== escape[offset]) return false
  }
  return true
}

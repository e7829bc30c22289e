// The forms a secret's value can take when a destination echoes it, and what replaces each: the
// value as text (letters in any case, any character escaped the way a URL, JSON or HTML writer
// would), and the characters of its base64 and base64url that depend on the value alone.

import { SECRET_VALUE } from './secret-values'

/**
 * One form of a secret's value to find in what goes back to a client, and what takes its place.
 *
 * Each character of `text` named by `escapes` may also be written as one of its
 * {@link characterEscapes}; with `anyCase`, letters match in either case, and may be escaped as
 * either case. Escapes always match in any case (`%2f`, `%2F`). With `escapes: 'none'` and no
 * `anyCase`, `text` is matched byte for byte.
 */
export interface SecretForm {
  /** The name of the secret the form belongs to: what a scrub reports, never the value. */
  readonly secret: string
  /** The characters to find, in order (Latin-1; a secret's forms are visible ASCII). */
  readonly text: string
  /**
   * Which characters of `text` may appear escaped instead of as themselves: `all`, `symbols`
   * (all but letters and digits: what a writer escapes in base64), or `none`.
   */
  readonly escapes: 'all' | 'symbols' | 'none'
  /** True when letters match in either case. */
  readonly anyCase: boolean
  /** What replaces a match. */
  readonly replacement: string
}

/** The longest escape of one character (`\u002f`, `&#x2f;`, `&quot;`, `&#126;`), in bytes. */
export const LONGEST_SPELLING = 6

/**
 * Every form of `value` to replace by `placeholder`:
 * - the value as text: letters in any case (an echo that upper-cases it), and any character
 *   written as itself or escaped in any of the ways {@link characterEscapes} lists, mixed freely;
 * - for each of the three positions the value can take inside a larger base64 text (after 0, 1 or
 *   2 other bytes), in the base64 and base64url alphabets: the characters that depend on the value
 *   alone, and those followed by the last, zero-padded character (with and without `=` padding),
 *   which depends on the value alone when the value ends the encoded bytes. These match case for
 *   case, and only `+`, `/` and `=` may be escaped (a JSON writer's `\/`, a URL's `%2B`).
 *
 * Textual forms are one per-character matcher rather than a list of strings: the escapes
 * combine per character (encodeURI escapes some characters, encodeURIComponent more, an
 * upper-casing echo changes hex digits), so a list would need every combination, about 10^17 for
 * a 17-character value. A per-character matcher covers them all at the cost of reading each byte
 * once; values are at least 8 characters, so even a lenient match does not occur by chance.
 * @throws TypeError when `value` is not 8 to 4096 visible ASCII characters (never quoting it).
 */
export function secretForms (name: string, value: string, placeholder: string): SecretForm[] {
  if (!SECRET_VALUE.test(value)) throw new TypeError(`secret "${name}": a value must be 8 to 4096 visible ASCII characters`)
  const forms: SecretForm[] = [{ secret: name, text: value, escapes: 'all', anyCase: true, replacement: placeholder }]
  for (const text of base64Texts(value)) forms.push({ secret: name, text, escapes: 'symbols', anyCase: false, replacement: placeholder })
  return forms
}

/**
 * The base64 and base64url characters that depend on `value` alone, at each alignment; and the
 * same followed by the trailing character (and padding) the value ends with when it ends the
 * encoded bytes.
 */
function base64Texts (value: string): Set<string> {
  const bytes = Buffer.from(value, 'latin1')
  const texts = new Set<string>()
  for (const before of [0, 1, 2]) {
    const encoded = Buffer.concat([Buffer.alloc(before), bytes]).toString('base64')
    // The first character made only of the value's bits, and the one after the last.
    const from = Math.ceil(before * 8 / 6)
    const to = Math.floor((before + bytes.length) * 8 / 6)
    const padded = encoded.slice(from)
    for (const text of [encoded.slice(from, to), padded.replace(/=+$/, ''), padded]) {
      texts.add(text)
      texts.add(text.replace(/\+/g, '-').replace(/\//g, '_'))
    }
  }
  return texts
}

const NAMED_ENTITIES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' }
const JSON_SHORT_ESCAPES = new Set(['/', '"', '\\'])
const escapesByCode: Array<readonly string[] | undefined> = []

/**
 * The ways a writer may escape the visible ASCII character `code`, lower-cased (match them in
 * any case): URL percent-encoding, once (`%2f`) and twice (`%252f`); JSON's `\u002f` and its
 * short `\/`, `\"`, `\\`; HTML's `&#47;`, `&#x2f;` and the named `&amp;`, `&lt;`, `&gt;`,
 * `&quot;`, `&apos;`. Each starts with `%`, `\` or `&`. None for other codes.
 */
export function characterEscapes (code: number): readonly string[] {
  if (code < 0x21 || code > 0x7e) return []
  let escapes = escapesByCode[code]
  if (escapes === undefined) {
    const character = String.fromCharCode(code)
    const hex = code.toString(16).padStart(2, '0')
    const list = [`%${hex}`, `%25${hex}`, `\\u00${hex}`, `&#${code};`, `&#x${hex};`]
    if (JSON_SHORT_ESCAPES.has(character)) list.push(`\\${character}`)
    const named = NAMED_ENTITIES[character]
    if (named !== undefined) list.push(named)
    escapes = list
    escapesByCode[code] = escapes
  }
  return escapes
}

const HEX_VALUE = Int8Array.from({ length: 256 }, (_, code) => {
  const character = String.fromCharCode(code)
  return /[0-9a-fA-F]/.test(character) ? parseInt(character, 16) : -1
})
const NAMED_ENTITY_CODES: ReadonlyArray<readonly [Uint8Array, number]> = Object.entries(NAMED_ENTITIES).map(([character, entity]) => [Buffer.from(entity.slice(1), 'latin1'), character.charCodeAt(0)])
const isVisible = (code: number): boolean => code >= 0x21 && code <= 0x7e
/** `code` of an ASCII letter, lower-cased. */
const lower = (code: number): number => code >= 0x41 && code <= 0x5a ? code + 32 : code

/**
 * Reads the escape at `bytes[at]` (one of {@link characterEscapes}, in any case): the character
 * it stands for and its length, as `length << 8 | code`; -1 when no whole escape starts there.
 * `%25hh` reads as a twice-encoded `hh` (length 5); it is also an escaped `%` followed by `hh`.
 * Equivalent to looking the bytes up in {@link characterEscapes}, but reads each byte once.
 */
export function escapedCharacterAt (bytes: Uint8Array, at: number): number {
  const end = bytes.length
  const byte = bytes[at]
  if (byte === 0x25) { // %hh, %25hh
    if (at + 3 > end) return -1
    const code = hexPair(bytes, at + 1)
    if (code === 0x25 && at + 5 <= end) {
      const twice = hexPair(bytes, at + 3)
      if (isVisible(twice)) return 5 << 8 | twice
    }
    return isVisible(code) ? 3 << 8 | code : -1
  }
  if (byte === 0x5c) { // \u00hh, \/, \", \\
    if (at + 2 > end) return -1
    const next = bytes[at + 1] as number
    if (next === 0x2f || next === 0x22 || next === 0x5c) return 2 << 8 | next
    if (lower(next) !== 0x75 || at + 6 > end || bytes[at + 2] !== 0x30 || bytes[at + 3] !== 0x30) return -1
    const code = hexPair(bytes, at + 4)
    return isVisible(code) ? 6 << 8 | code : -1
  }
  if (byte !== 0x26 || at + 2 > end) return -1
  if (bytes[at + 1] !== 0x23) { // &amp; &lt; &gt; &quot; &apos;
    for (const [name, code] of NAMED_ENTITY_CODES) {
      if (at + 1 + name.length <= end && name.every((expected, offset) => lower(bytes[at + 1 + offset] as number) === expected)) {
        return (name.length + 1) << 8 | code
      }
    }
    return -1
  }
  if (at + 3 > end) return -1
  if (lower(bytes[at + 2] as number) === 0x78) { // &#xhh;
    if (at + 6 > end || bytes[at + 5] !== 0x3b) return -1
    const code = hexPair(bytes, at + 3)
    return isVisible(code) ? 6 << 8 | code : -1
  }
  // &#dd; or &#ddd;, no leading zero
  let code = 0
  for (let offset = at + 2; offset < end && offset < at + 6; offset++) {
    const digit = (bytes[offset] as number) - 0x30
    if (bytes[offset] === 0x3b) return offset > at + 2 && isVisible(code) && bytes[at + 2] !== 0x30 ? (offset + 1 - at) << 8 | code : -1
    if (digit < 0 || digit > 9) return -1
    code = code * 10 + digit
  }
  return -1
}

function hexPair (bytes: Uint8Array, at: number): number {
  const high = HEX_VALUE[bytes[at] as number] as number
  const low = HEX_VALUE[bytes[at + 1] as number] as number
  return high < 0 || low < 0 ? -1 : high << 4 | low
}

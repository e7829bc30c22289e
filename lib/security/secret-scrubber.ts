// Finds the forms of secret values (secret-forms.ts) in header strings and streamed bodies and
// replaces them, holding back only the trailing bytes that may still begin a match.
//
// At each position the longest form that matches wins; a match that starts inside the previous
// one but ends after it replaces the rest too, so overlapping values never leave a tail behind.
// A stream scrubbed in chunks, however they are cut, gives the same bytes as in one piece:
// a position is decided only once the bytes after it settle every form that could start there.

import { Transform } from 'node:stream'
import { LONGEST_SPELLING, escapedCharacterAt, secretForms, type SecretForm } from './secret-forms'
import {
  ALL_BYTES,
  ESCAPE_START,
  NO,
  PARTIAL,
  UPPER,
  compile,
  matchExact,
  matchFrom,
  spellings,
  startBytes,
  variants,
  type CompiledForm
} from './secret-form-matching'

/** A secret as {@link createSecretScrubber} takes it. */
export interface ScrubbedSecret {
  readonly name: string
  /** 8 to 4096 visible ASCII characters. */
  readonly value: string
  /** What the client holds and sees in place of the value. */
  readonly placeholder: string
}

/**
 * A string to find byte for byte and what replaces it, such as the `Basic` credentials the proxy
 * built from a client's: the exact text the proxy sent goes back as the exact text it received.
 */
export interface ExactForm {
  /** Latin-1 text, at least one character. */
  readonly text: string
  readonly replacement: string
  /** The secret's name, reported when the form is found. */
  readonly secret: string
}

/** Scrubs one stream: feed it every chunk in order, then call `end()`. */
export interface ChunkScrubber {
  /**
   * Scrubs `chunk` after the bytes held from before, and returns what can be sent now: all of
   * it but the trailing bytes that are still the beginning of a form (at most
   * {@link SecretScrubber.maxHoldBack}). The returned buffer may share memory with `chunk`.
   */
  push (chunk: Buffer): Buffer
  /** Returns the held bytes, scrubbed as the end of the stream. */
  end (): Buffer
  /** How many bytes are held back now. */
  readonly held: number
}

/**
 * The most bytes a stream scrubber holds back for secrets whose longest value has
 * `longestValueLength` characters: one less than its longest form, each character escaped in
 * {@link LONGEST_SPELLING} bytes (`\u002f`). 24,575 bytes for a 4,096-character value; base64
 * forms are shorter. {@link SecretScrubber.withExactForms} may raise it to its longest text
 * less one.
 */
export function holdBackBound (longestValueLength: number): number {
  return LONGEST_SPELLING * longestValueLength - 1
}

/**
 * Compiles the forms of `secrets` (see {@link secretForms}), each replaced by its placeholder.
 * Build one per set of secrets and share it between requests: it is immutable.
 * @throws TypeError when a value is not 8 to 4096 visible ASCII characters.
 */
export function createSecretScrubber (secrets: readonly ScrubbedSecret[]): SecretScrubber {
  return new SecretScrubber(secrets.flatMap(({ name, value, placeholder }) => secretForms(name, value, placeholder)))
}

const EMPTY = Buffer.alloc(0)

/** Where forms may start, each map keyed by what is found at the start. */
interface FormIndex {
  /** By the first two bytes, `first << 8 | second`. */
  readonly byPair: Map<number, CompiledForm[]>
  /** By the first byte, for the last byte of the bytes scanned. */
  readonly byFirst: Map<number, CompiledForm[]>
  /** Forms whose first character may be escaped, by that character (each case, when `anyCase`). */
  readonly byEscaped: Map<number, CompiledForm[]>
  /** Forms whose first character is itself an escape's first byte (`%`, `\`, `&`), by it. */
  readonly byEscapeByte: Map<number, CompiledForm[]>
}

/** Where a scan of some bytes stopped: what to send, and what to keep for the next chunk. */
interface Scanned {
  readonly output: Buffer
  /** Offset of the first byte held back (the length when none is). */
  readonly holdFrom: number
  /** How many held bytes an emitted replacement already covers. */
  readonly covered: number
}

/** The longest match found so far at one position, or PARTIAL. */
interface Best {
  end: number
  form: CompiledForm | null
}

/**
 * Finds the forms of secret values in text and streams and replaces them. Immutable; every
 * method is safe to call for any number of requests at once.
 */
export class SecretScrubber {
  /** Bit `first << 8 | second` set when some form may start with those two bytes. */
  readonly #pairs: Int32Array
  /** Non-zero when some form may start with that byte (for the last byte of the bytes). */
  readonly #firsts: Uint8Array
  /** Per-request exact forms first: on a tie they win. */
  readonly #indexes: readonly FormIndex[]
  /**
   * The most bytes a {@link ChunkScrubber} of this scrubber holds back: its longest form, in
   * bytes, less one (see {@link holdBackBound}).
   */
  readonly maxHoldBack: number

  /**
   * Compiles `forms` ({@link createSecretScrubber} builds the forms of a set of secrets). With
   * `extending`, finds that scrubber's forms too, sharing what it compiled; on a tie (same
   * place, same length) `forms` win.
   * @throws TypeError when a form's text is empty or not Latin-1.
   */
  constructor (forms: readonly SecretForm[], extending?: SecretScrubber) {
    const base = extending
    this.#pairs = base === undefined ? new Int32Array(65536 / 32) : base.#pairs.slice()
    this.#firsts = base === undefined ? new Uint8Array(256) : base.#firsts.slice()
    const index: FormIndex = { byPair: new Map(), byFirst: new Map(), byEscaped: new Map(), byEscapeByte: new Map() }
    let longest = base === undefined ? 0 : base.maxHoldBack + 1
    for (const form of forms) longest = Math.max(longest, this.#add(index, compile(form)))
    this.#indexes = base === undefined ? [index] : [index, ...base.#indexes]
    this.maxHoldBack = Math.max(0, longest - 1)
  }

  /**
   * A scrubber that also finds `forms`, byte for byte, each replaced by its own replacement and
   * preferred to any other form found at the same place with the same length. Cheap (copies
   * an 8 KiB table): make one per request that needs it; this scrubber is left unchanged.
   * @throws TypeError when a text is empty or not Latin-1.
   */
  withExactForms (forms: readonly ExactForm[]): SecretScrubber {
    return new SecretScrubber(forms.map(({ text, replacement, secret }) => ({ secret, text, replacement, escapes: 'none', anyCase: false })), this)
  }

  /**
   * `text` (a header name or value, a trailer) with every form replaced; adds the name of each
   * secret found to `found`. Returns `text` itself when nothing was found.
   */
  scrubText (text: string, found: Set<string>): string {
    // No form holds a character above U+00FF, so none spans one: scrub the runs between them.
    // eslint-disable-next-line no-control-regex
    if (/[^\x00-\xff]/.test(text)) return text.split(/([^\x00-\xff]+)/).map((run, index) => index % 2 === 1 ? run : this.scrubText(run, found)).join('')
    const bytes = Buffer.from(text, 'latin1')
    const { output } = this.#scan(bytes, 0, true, found)
    return output === bytes ? text : output.toString('latin1')
  }

  /** A scrubber for one stream; adds the name of each secret it finds to `found`. */
  chunkScrubber (found: Set<string>): ChunkScrubber {
    return new StreamState((bytes, covered, final) => this.#scan(bytes, covered, final, found))
  }

  /**
   * A byte-stream `Transform` that scrubs what flows through it (see {@link chunkScrubber});
   * adds the name of each secret it finds to `found`.
   */
  transform (found: Set<string>): Transform {
    const chunks = this.chunkScrubber(found)
    return new Transform({
      transform (chunk: Buffer, _encoding, callback) {
        const output = chunks.push(chunk)
        callback(null, output.length === 0 ? undefined : output)
      },
      flush (callback) {
        const output = chunks.end()
        callback(null, output.length === 0 ? undefined : output)
      }
    })
  }

  /** Indexes `form` by every way it may start; returns its longest length in bytes. */
  #add (index: FormIndex, form: CompiledForm): number {
    const { codes, escapes } = form
    const first = codes[0] as number
    const seconds = codes.length > 1 ? startBytes(form, 1) : ALL_BYTES
    const pairs = new Set<number>()
    const firsts = new Set<number>()
    for (const spelling of spellings(form, 0)) {
      for (const byte of variants(form, spelling, 0)) {
        firsts.add(byte)
        for (const second of spelling.length > 1 ? variants(form, spelling, 1) : seconds) pairs.add(byte << 8 | second)
      }
    }
    for (const pair of pairs) {
      this.#pairs[pair >>> 5] = (this.#pairs[pair >>> 5] as number) | 1 << (pair & 31)
      listIn(index.byPair, pair).push(form)
    }
    for (const byte of firsts) {
      this.#firsts[byte] = 1
      listIn(index.byFirst, byte).push(form)
    }
    if (ESCAPE_START[first] === 1) listIn(index.byEscapeByte, first).push(form)
    if ((escapes.byCode[first] as Uint8Array[]).length > 0) {
      for (const code of new Set(form.anyCase ? [first, UPPER[first] as number] : [first])) listIn(index.byEscaped, code).push(form)
    }
    let longest = 0
    for (const code of codes) longest += escapes.longest[code] as number
    return longest
  }

  /**
   * Scrubs `bytes`, of which the first `covered` were already replaced. Unless `final`, stops at
   * the first position where a form may match bytes still to come and holds back from there.
   */
  #scan (bytes: Buffer, covered: number, final: boolean, found: Set<string>): Scanned {
    const length = bytes.length
    const best: Best = { end: NO, form: null }
    let pieces: Buffer[] | null = null
    let copyFrom = covered
    let coveredTo = covered
    for (let at = this.#next(bytes, 0); at < length; at = this.#next(bytes, at + 1)) {
      this.#longestAt(bytes, at, final, best)
      if (best.end === PARTIAL) {
        pieces ??= []
        if (at > copyFrom) pieces.push(bytes.subarray(copyFrom, at))
        return { output: joined(pieces), holdFrom: at, covered: Math.max(0, coveredTo - at) }
      }
      const winner = best.form
      // Inside a replaced match, only a match that ends after it counts, to replace the rest.
      if (winner === null || best.end <= coveredTo) continue
      pieces ??= []
      if (at > copyFrom) pieces.push(bytes.subarray(copyFrom, at))
      pieces.push(winner.replacement)
      found.add(winner.secret)
      copyFrom = coveredTo = best.end
    }
    if (pieces === null) return { output: covered === 0 ? bytes : bytes.subarray(covered), holdFrom: length, covered: 0 }
    if (length > copyFrom) pieces.push(bytes.subarray(copyFrom))
    return { output: Buffer.concat(pieces), holdFrom: length, covered: 0 }
  }

  /** The first position from `from` where some form may start: the hot loop, one table lookup a byte. */
  #next (bytes: Buffer, from: number): number {
    const pairs = this.#pairs
    const last = bytes.length - 1
    let at = from
    if (at < last) {
      let first = bytes[at] as number
      for (; at < last; at++) {
        const second = bytes[at + 1] as number
        if (((pairs[first << 3 | second >>> 5] as number) & 1 << (second & 31)) !== 0) return at
        first = second
      }
    }
    if (at === last && this.#firsts[bytes[at] as number] !== 0) return at
    return bytes.length
  }

  /** Sets `best` to the longest match at `bytes[at]`, or to PARTIAL. */
  #longestAt (bytes: Buffer, at: number, final: boolean, best: Best): void {
    best.end = NO
    best.form = null
    const length = bytes.length
    const byte = bytes[at] as number
    if (ESCAPE_START[byte] === 1 && (final || at + LONGEST_SPELLING <= length)) {
      // Read the escape once for all the forms, rather than each form trying its spellings.
      // Forms that start with this byte itself may read it more than one way: they try each.
      const decoded = escapedCharacterAt(bytes, at)
      for (const index of this.#indexes) {
        if (decoded !== NO && !longestOf(index.byEscaped.get(decoded & 0xff), bytes, at, 1, at + (decoded >> 8), final, best)) return
        if (!longestOf(index.byEscapeByte.get(byte), bytes, at, 0, at, final, best)) return
      }
      return
    }
    const key = at + 1 < length ? byte << 8 | (bytes[at + 1] as number) : byte
    for (const index of this.#indexes) {
      if (!longestOf(at + 1 < length ? index.byPair.get(key) : index.byFirst.get(key), bytes, at, 0, at, final, best)) return
    }
  }
}

/**
 * Matches each of `forms` from character `k` at `bytes[from]` (the first `k` characters
 * matched from `at`), keeping the longest in `best`; false (`best.end` PARTIAL) when one may
 * still match bytes to come.
 */
function longestOf (forms: readonly CompiledForm[] | undefined, bytes: Buffer, at: number, k: number, from: number, final: boolean, best: Best): boolean {
  if (forms === undefined) return true
  for (const form of forms) {
    const end = k === 0 && form.exact ? matchExact(form, bytes, at, final) : matchFrom(form, bytes, k, from, final, null)
    if (end === PARTIAL) {
      best.end = PARTIAL
      best.form = null
      return false
    }
    if (end > best.end) {
      best.end = end
      best.form = form
    }
  }
  return true
}

/** One stream's held bytes. */
class StreamState implements ChunkScrubber {
  #held: Buffer = EMPTY
  #covered = 0
  readonly #scan: (bytes: Buffer, covered: number, final: boolean) => Scanned

  constructor (scan: (bytes: Buffer, covered: number, final: boolean) => Scanned) {
    this.#scan = scan
  }

  get held (): number {
    return this.#held.length
  }

  push (chunk: Buffer): Buffer {
    return this.#scrub(chunk, false)
  }

  end (): Buffer {
    return this.#scrub(EMPTY, true)
  }

  #scrub (chunk: Buffer, final: boolean): Buffer {
    const bytes = this.#held.length === 0 ? chunk : Buffer.concat([this.#held, chunk])
    const scanned = this.#scan(bytes, this.#covered, final)
    // A copy, so that a small held tail never keeps a large chunk in memory.
    this.#held = scanned.holdFrom === bytes.length ? EMPTY : Buffer.from(bytes.subarray(scanned.holdFrom))
    this.#covered = scanned.covered
    return scanned.output
  }
}

function joined (pieces: Buffer[]): Buffer {
  if (pieces.length === 0) return EMPTY
  return pieces.length === 1 ? pieces[0] as Buffer : Buffer.concat(pieces)
}

function listIn (map: Map<number, CompiledForm[]>, key: number): CompiledForm[] {
  let list = map.get(key)
  if (list === undefined) {
    list = []
    map.set(key, list)
  }
  return list
}

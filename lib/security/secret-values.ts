// A secret's value and what a secret may be: the name, value and placeholder rules, the default
// placeholder, and a value given in the options or asked of a source (a vault, a KMS) and kept
// until it expires.

import { createHash } from 'node:crypto'
import type { ForwardProxySecretSource } from '../../types/secrets'
import { ProxyError } from '../protocol/errors'

/** What a secret's name may be. */
export const SECRET_NAME = /^[A-Za-z0-9_.-]{1,64}$/
/**
 * What a secret's value may be: visible ASCII, so that it survives a header, percent-encoding
 * and base64 unchanged and can be searched for in any of them; 8 characters at least, so that
 * scrubbing it from responses never hits ordinary text.
 */
export const SECRET_VALUE = /^[\x21-\x7e]{8,4096}$/
/** What a placeholder may be: unreserved URL characters, so it reads the same in a path, a query and a header. */
export const PLACEHOLDER = /^[A-Za-z0-9._~-]{8,128}$/

/**
 * The placeholder of a secret that names none: `ffp_placeholder_<name>_` and the first 16
 * hexadecimal digits of the SHA-256 of the name (derived from the name only, never the value).
 */
export function defaultPlaceholder (name: string): string {
  return `ffp_placeholder_${name}_${createHash('sha256').update(name).digest('hex').slice(0, 16)}`
}

/** How many of a secret's earlier values are still scrubbed after it rotates. */
const MAX_RETIRED_VALUES = 2

// How long a source's plain-string answer is kept, and how long a source may take.
const DEFAULT_SOURCE_MAX_AGE_MS = 300_000
const SOURCE_TIMEOUT_MS = 10_000

/** A secret's value: given, or asked of its source and kept until it expires. */
export class SecretValue {
  readonly #name: string
  readonly #source: ForwardProxySecretSource | undefined
  /** Every placeholder of the set: a value must hold none. */
  readonly #placeholders: () => readonly string[]
  #known: { readonly value: string, readonly expiresAt: number } | undefined
  #retired: readonly string[] = []
  #pending: Promise<string> | undefined

  constructor (name: string, fixed: string | undefined, source: ForwardProxySecretSource | undefined, placeholders: () => readonly string[]) {
    this.#name = name
    this.#source = source
    this.#placeholders = placeholders
    if (fixed !== undefined) this.#known = { value: fixed, expiresAt: Infinity }
  }

  /** The value when one is known (for scrubbing responses), expired or not. */
  get known (): { readonly value: string } | undefined {
    return this.#known
  }

  /**
   * The values this secret had before the one it has now, newest first, at most
   * {@link MAX_RETIRED_VALUES}: still scrubbed from responses, since a destination may go on
   * accepting (and showing) a rotated credential for a while.
   */
  get retired (): readonly string[] {
    return this.#retired
  }

  /** Remembers `values` (newest first) as values this secret had before; its value now is never one. */
  retire (values: ReadonlyArray<string | undefined>): void {
    const current = this.#known?.value
    const kept: string[] = []
    for (const value of [...values, ...this.#retired]) {
      if (value !== undefined && value !== current && !kept.includes(value)) kept.push(value)
    }
    this.#retired = kept.slice(0, MAX_RETIRED_VALUES)
  }

  /**
   * The value, asking the source when none is kept or it expired (one question at a time).
   * @throws ProxyError 500 `proxy_internal_error` when the source fails or gives an unusable value.
   */
  async get (): Promise<string> {
    const known = this.#known
    if (known !== undefined && Date.now() < known.expiresAt) return known.value
    this.#pending ??= this.#ask().finally(() => { this.#pending = undefined })
    return await this.#pending
  }

  async #ask (): Promise<string> {
    const source = this.#source as ForwardProxySecretSource
    let answer: Awaited<ReturnType<ForwardProxySecretSource['getValue']>>
    const signal = AbortSignal.timeout(SOURCE_TIMEOUT_MS)
    try {
      answer = await within(source.getValue(this.#name, signal), signal)
    } catch (error) {
      if (error === signal.reason) throw unavailable(this.#name, `its source did not answer within ${SOURCE_TIMEOUT_MS / 1000} s`)
      throw unavailable(this.#name, 'its source failed', error)
    }
    const { value, maxAge } = typeof answer === 'string' ? { value: answer, maxAge: DEFAULT_SOURCE_MAX_AGE_MS } : { value: answer?.value, maxAge: answer?.maxAge ?? DEFAULT_SOURCE_MAX_AGE_MS }
    // Never quote the value: the message is logged.
    if (typeof value !== 'string' || !SECRET_VALUE.test(value) || this.#placeholders().some((placeholder) => value.includes(placeholder))) {
      throw unavailable(this.#name, 'its source gave a value that is not 8 to 4096 visible ASCII characters without a placeholder')
    }
    if (typeof maxAge !== 'number' || !(maxAge >= 0)) throw unavailable(this.#name, 'its source gave a maxAge that is not a number of milliseconds')
    const previous = this.#known?.value
    this.#known = { value, expiresAt: Date.now() + maxAge }
    if (previous !== undefined && previous !== value) this.retire([previous])
    return value
  }
}

/**
 * `answer`, or a rejection with the signal's reason once it aborts: a source that ignores the
 * signal cannot hold the request, and every later one waiting on the same question, forever.
 * A late answer is dropped (a late failure too, so it is never unhandled).
 */
async function within<T> (answer: T | Promise<T>, signal: AbortSignal): Promise<T> {
  if (!(answer instanceof Promise)) return answer
  return await new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason)
    if (signal.aborted) onAbort()
    else signal.addEventListener('abort', onAbort, { once: true })
    answer.then(
      (value) => { signal.removeEventListener('abort', onAbort); resolve(value) },
      (error: unknown) => { signal.removeEventListener('abort', onAbort); reject(error) }
    )
  })
}

function unavailable (name: string, why: string, cause?: unknown): ProxyError {
  const reason = cause instanceof Error ? `: ${cause.name}` : ''
  return new ProxyError('proxy_internal_error', 'A secret the request needs is unavailable.', { details: 'secret unavailable', cause: new Error(`secret "${name}": ${why}${reason}`) })
}

/** `value` with every character outside the unreserved URL set percent-encoded (upper-case hex), as it appears in a path or query. */
export function percentEncoded (value: string): string {
  return value.replace(/[^A-Za-z0-9._~-]/g, (character) => `%${character.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`)
}

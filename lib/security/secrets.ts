// Secrets clients never hold: the placeholders clients send are replaced by the real values on
// requests to the hosts a secret is granted to; a request carrying a placeholder anywhere else is
// refused; a value a destination sends back, in any form the scrubber knows, goes back to its
// placeholder.

import type { ForwardProxyUser } from '../../types/user'
import type { HostPattern } from '../protocol/hosts'
import { type SecretValue, percentEncoded } from './secret-values'
import { createSecretScrubber, type ExactForm, type ScrubbedSecret, type SecretScrubber } from './secret-scrubber'

/** A secret as the set holds it (see compileSecrets in secret-options.ts). */
export interface CompiledSecret {
  readonly name: string
  readonly value: SecretValue
  readonly placeholder: string
  /** Header names arrive lower-cased. */
  readonly lowerPlaceholder: string
  readonly grants: readonly SecretGrant[]
}

/** Where a secret may go: a host pattern and one port (443 when the entry names none). */
export interface SecretGrant {
  readonly pattern: HostPattern
  readonly port: number
}

// Scrubbers kept per secret set; a value rotated often leaves old ones, dropped past this count.
const MAX_KEPT_SCRUBBERS = 64

/** Adds the values of `secret` to scrub, the one known now first, then those it had before. */
function pushValues (into: ScrubbedSecret[], secret: CompiledSecret): void {
  const { name, placeholder, value } = secret
  const known = value.known
  if (known !== undefined) into.push({ name, value: known.value, placeholder })
  // A source may give back a value the set before this one had retired already.
  for (const retired of value.retired) if (retired !== known?.value) into.push({ name, value: retired, placeholder })
}

function grants (secret: CompiledSecret, host: string, port: number): boolean {
  return secret.grants.some((grant) => grant.port === port && grant.pattern.matches(host))
}

/** One scan of a request: what it found, and (on the second scan) the values to put in. */
interface Scan {
  readonly request: SecretRequest
  readonly used: Set<CompiledSecret>
  readonly values: ReadonlyMap<CompiledSecret, string> | null
  /** Texts built from the client's while putting values in (second scan). */
  readonly produced: ExactForm[]
}

/** A request as {@link SecretSet.substitute} sees it: after the outgoing head was built. */
export interface SecretRequest {
  readonly method: string
  /** Path and query as received. */
  readonly path: string
  /** Flat name/value pairs of the outgoing head. */
  readonly headers: readonly string[]
  /** The destination's canonical host. */
  readonly host: string
  /** The destination's port: a secret is granted to a host and port. */
  readonly port: number
  /** The proxy user (its `secrets`, when given, are the only ones it may use). */
  readonly user: ForwardProxyUser | null
  /** True inside an intercepted tunnel (TLS to the destination); false for plain `http://`. */
  readonly overTls: boolean
  /**
   * True when a host list in report mode would have refused the request: it goes on, but no
   * secret is put in it, even one granted to its destination.
   */
  readonly hostRefusalReported: boolean
}

/**
 * The outcome of {@link SecretSet.substitute}:
 * - `none`: no placeholder anywhere; send the request as built;
 * - `substituted`: placeholders replaced; send `path` and `headers`;
 * - `refused`: the request must not leave. `reason` says why: `not-granted` (a secret this
 *   destination may not have, or a placeholder in a header name or `Host`), `user-not-granted`
 *   (a secret the proxy user's `secrets` list leaves out), `reported-host` (a host list in
 *   report mode would have refused the request: enforcement would never have sent the secret),
 *   `plain-http` (the secret would cross the network in clear), `trace` (a TRACE echoes it).
 */
export type SecretSubstitution =
  | { readonly kind: 'none' }
  | {
    readonly kind: 'substituted'
    readonly path: string
    readonly headers: string[]
    /** Names of the secrets put in. */
    readonly secrets: readonly string[]
    /** The values put in, for scrubbing the response with them (see {@link SecretSet.scrubberFor}). */
    readonly given: readonly ScrubbedSecret[]
    /** Texts the proxy built from the client's (a re-encoded `Basic` credential) and what they replaced. */
    readonly produced: readonly ExactForm[]
  }
  | { readonly kind: 'refused', readonly reason: SecretRefusal, readonly secret: string }

/** Why a request carrying a placeholder may not leave (see {@link SecretSubstitution}). */
export type SecretRefusal = 'not-granted' | 'user-not-granted' | 'reported-host' | 'plain-http' | 'trace'

class SecretRefused extends Error {
  constructor (readonly reason: SecretRefusal, readonly secret: string) {
    super(reason)
  }
}

/** The compiled `secrets` option of one registration. */
export class SecretSet {
  readonly #secrets: readonly CompiledSecret[]
  /** Compiled scrubbers by the names and values they find. */
  readonly #scrubbers = new Map<string, SecretScrubber>()

  constructor (secrets: readonly CompiledSecret[]) {
    this.#secrets = secrets
  }

  /** The names of the secrets, in the order given. */
  get names (): string[] {
    return this.#secrets.map((secret) => secret.name)
  }

  /** True when a secret is granted to `host` (canonical) and `port`: tunnels to it are intercepted. */
  grantsDestination (host: string, port: number): boolean {
    return this.#secrets.some((secret) => grants(secret, host, port))
  }

  /**
   * Finds the placeholders in a request (header values, the decoded base64 of a Basic
   * `Authorization`, the path and query, percent-encoded or not) and replaces each with its
   * secret's value, percent-encoded in the path. A placeholder of a secret not granted to the
   * destination's host or not in the user's `secrets`, any placeholder in a header name or in
   * `Host`, a granted one in a request a host list in report mode would have refused, over plain
   * `http://` or in a TRACE refuse the whole request.
   * The request is scanned once to find and check the secrets it needs, their values are
   * fetched (from a source, when one is not kept), then it is scanned again to put them in.
   * @throws ProxyError 500 when a secret's source fails.
   */
  async substitute (request: SecretRequest): Promise<SecretSubstitution> {
    const found: Scan = { request, used: new Set(), values: null, produced: [] }
    try {
      this.#scanHeaders(found)
      this.#scanPath(found)
    } catch (error) {
      if (error instanceof SecretRefused) return { kind: 'refused', reason: error.reason, secret: error.secret }
      throw error
    }
    if (found.used.size === 0) return { kind: 'none' }
    const values = new Map<CompiledSecret, string>()
    for (const secret of found.used) values.set(secret, await secret.value.get())
    const filled: Scan = { request, used: new Set(), values, produced: [] }
    const headers = this.#scanHeaders(filled)
    const path = this.#scanPath(filled)
    return {
      kind: 'substituted',
      path: path ?? request.path,
      headers: headers ?? [...request.headers],
      secrets: [...found.used].map((secret) => secret.name),
      given: [...values].map(([secret, value]) => ({ name: secret.name, value, placeholder: secret.placeholder })),
      produced: filled.produced
    }
  }

  /**
   * The scrubber for the response to one request toward `host` (canonical) and `port`: it finds
   * every form of the values of the secrets granted there (those known: given in the options,
   * or fetched from a source and not expired), of the values this request was `given` (so a
   * value rotated while the request was in flight is still found), and the exact texts the
   * proxy `produced` from the client's (a `Basic` credential it re-encoded), each replaced by
   * what the client sent. Null when there is nothing to look for: a destination no secret is
   * granted to pays nothing. Scrubbers are compiled once per set of granted values and shared.
   */
  scrubberFor (host: string, port: number, given: readonly ScrubbedSecret[] = [], produced: readonly ExactForm[] = []): SecretScrubber | null {
    const granted: ScrubbedSecret[] = []
    for (const secret of this.#secrets) {
      if (grants(secret, host, port)) pushValues(granted, secret)
    }
    for (const secret of given) {
      if (!granted.some((other) => other.name === secret.name && other.value === secret.value)) granted.push(secret)
    }
    const scrubber = this.#shared(granted)
    if (scrubber === null) return null
    return produced.length === 0 ? scrubber : scrubber.withExactForms(produced)
  }

  /** The scrubber of `secrets`, compiled once per set of names and values; null for none. */
  #shared (secrets: readonly ScrubbedSecret[]): SecretScrubber | null {
    if (secrets.length === 0) return null
    const key = secrets.map((secret) => `${secret.name}\u0000${secret.value}`).join('\u0000')
    let scrubber = this.#scrubbers.get(key)
    if (scrubber === undefined) {
      // Rotated values leave their old scrubbers behind: keep a handful, not every one.
      if (this.#scrubbers.size >= MAX_KEPT_SCRUBBERS) this.#scrubbers.clear()
      scrubber = createSecretScrubber(secrets)
      this.#scrubbers.set(key, scrubber)
    }
    return scrubber
  }

  /**
   * The scrubber of every secret value known now (given in the options, or fetched from a source
   * and not expired), whatever its hosts: what a traffic capture passes everything it writes
   * through. Null when no value is known.
   */
  knownValuesScrubber (): SecretScrubber | null {
    const known: ScrubbedSecret[] = []
    for (const secret of this.#secrets) pushValues(known, secret)
    return this.#shared(known)
  }

  /**
   * Takes over, as retired values, what `previous` (the set this one replaces on a reload or
   * `reconfigure`) knew of each secret of the same name: a value rotated by the reload is
   * still scrubbed from responses.
   */
  carryRetiredValuesFrom (previous: SecretSet | null): void {
    if (previous === null) return
    for (const secret of this.#secrets) {
      const before = previous.#secrets.find((candidate) => candidate.name === secret.name)
      if (before !== undefined) secret.value.retire([before.value.known?.value, ...before.value.retired])
    }
  }

  /**
   * What takes the place of a placeholder found in the request, after checking it may be sent:
   * its value on the second scan; the placeholder itself (no change) on the first.
   */
  #grant (secret: CompiledSecret, scan: Scan): string {
    const { request } = scan
    if (!grants(secret, request.host, request.port)) throw new SecretRefused('not-granted', secret.name)
    const userSecrets = request.user?.secrets
    if (userSecrets !== undefined && !userSecrets.includes(secret.name)) throw new SecretRefused('user-not-granted', secret.name)
    if (request.hostRefusalReported) throw new SecretRefused('reported-host', secret.name)
    if (!request.overTls) throw new SecretRefused('plain-http', secret.name)
    if (request.method === 'TRACE') throw new SecretRefused('trace', secret.name)
    scan.used.add(secret)
    return scan.values?.get(secret) ?? secret.placeholder
  }

  #scanHeaders (scan: Scan): string[] | null {
    const flat = scan.request.headers
    let out: string[] | null = null
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const name = flat[i] as string
      const value = flat[i + 1] as string
      const lowerName = name.toLowerCase()
      for (const secret of this.#secrets) {
        if (lowerName.includes(secret.lowerPlaceholder)) throw new SecretRefused('not-granted', secret.name)
      }
      const replaced = lowerName === 'host' ? this.#refuseIn(value) : this.#substituteValue(lowerName, value, scan)
      if (replaced !== value) {
        out ??= [...flat]
        out[i + 1] = replaced
      }
    }
    return out
  }

  /** `Host` names the destination: a placeholder there is never a credential. */
  #refuseIn (value: string): string {
    for (const secret of this.#secrets) {
      if (value.includes(secret.placeholder)) throw new SecretRefused('not-granted', secret.name)
    }
    return value
  }

  #substituteValue (lowerName: string, value: string, scan: Scan): string {
    let replaced = this.#replaceIn(value, scan)
    if (lowerName === 'authorization') {
      const basic = /^(basic[ \t]+)([A-Za-z0-9+/]+={0,2})[ \t]*$/i.exec(replaced)
      if (basic !== null) {
        const decoded = Buffer.from(basic[2] as string, 'base64').toString('latin1')
        const substituted = this.#replaceIn(decoded, scan)
        if (substituted !== decoded) {
          const encoded = Buffer.from(substituted, 'latin1').toString('base64')
          replaced = `${basic[1] as string}${encoded}`
          const secret = this.#secrets.find((candidate) => decoded.includes(candidate.placeholder))
          if (scan.values !== null && secret !== undefined) scan.produced.push({ text: encoded, replacement: basic[2] as string, secret: secret.name })
        }
      }
    }
    return replaced
  }

  #replaceIn (text: string, scan: Scan): string {
    let replaced = text
    for (const secret of this.#secrets) {
      if (replaced.includes(secret.placeholder)) {
        replaced = replaced.split(secret.placeholder).join(this.#grant(secret, scan))
      }
    }
    return replaced
  }

  /**
   * The path with every placeholder replaced, whether the client percent-encoded some of its
   * characters or not; null when it holds none. The value goes in percent-encoded (every
   * character but the unreserved ones), so it can never end a path segment or add a query
   * parameter; the rest of the path is kept byte for byte.
   */
  #scanPath (scan: Scan): string | null {
    const { path } = scan.request
    const { decoded, offsets } = percentDecoded(path)
    let out = ''
    let copiedUpTo = 0
    let found = false
    for (let hit = this.#firstPlaceholderAt(decoded, 0); hit !== null;) {
      const [index, secret] = hit
      out += path.slice(copiedUpTo, offsets[index]) + percentEncoded(this.#grant(secret, scan))
      const after = index + secret.placeholder.length
      copiedUpTo = offsets[after] as number
      found = true
      hit = this.#firstPlaceholderAt(decoded, after)
    }
    return found ? out + path.slice(copiedUpTo) : null
  }

  #firstPlaceholderAt (decoded: string, from: number): [number, CompiledSecret] | null {
    let best: [number, CompiledSecret] | null = null
    for (const secret of this.#secrets) {
      const index = decoded.indexOf(secret.placeholder, from)
      if (index !== -1 && (best === null || index < best[0])) best = [index, secret]
    }
    return best
  }
}

/**
 * `path` with its `%XX` escapes decoded (one character per byte), and for each decoded
 * character the offset in `path` where it starts (plus one past the end).
 */
function percentDecoded (path: string): { decoded: string, offsets: number[] } {
  if (!path.includes('%')) return { decoded: path, offsets: Array.from({ length: path.length + 1 }, (_, i) => i) }
  let decoded = ''
  const offsets: number[] = []
  for (let i = 0; i < path.length;) {
    offsets.push(i)
    if (path[i] === '%' && /^[0-9A-Fa-f]{2}$/.test(path.slice(i + 1, i + 3))) {
      decoded += String.fromCharCode(parseInt(path.slice(i + 1, i + 3), 16))
      i += 3
    } else {
      decoded += path[i] as string
      i += 1
    }
  }
  offsets.push(path.length)
  return { decoded, offsets }
}

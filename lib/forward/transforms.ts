// Request and response transforms: how they run on a copy of the head and what they may not change,
// and the built-in header-rules transform.

import type { FastifyRequest } from 'fastify'
import type { ForwardProxyDestination } from '../../types/destination'
import type {
  ForwardProxyIncomingResponse,
  ForwardProxyOutgoingRequest,
  ForwardProxyRequestTransform
} from '../../types/interception'
import { isProxyError, ProxyError, ForwardProxyRuleError } from '../protocol/errors'
import { isMarkedRefusal, refusedBy } from '../protocol/refusals'
import { isEquivalentAuthority, matchesAny, type HostPattern, compileHostPatterns } from '../protocol/hosts'
import { HOP_BY_HOP, TOKEN, UNSAFE_VALUE } from './outgoing-head'
import type { ForwardProxyHeaderRule } from '../../types/header-rules'

/** Header field values as the transform contracts hold them. */
export type HeaderRecord = Record<string, string | string[]>

/** The request the proxy built, before transforms (its method is the client's). */
export interface BuiltRequest {
  readonly path: string
  /** Flat name/value pairs as sent when no transform edits them. */
  readonly headers: string[]
  /** The port an omitted `Host` port stands for (80 for http, 443 for https). */
  readonly defaultPort: number
}

/**
 * Where a transform's AbortSignal comes from: read only when a transform runs, so a request
 * with no transforms never makes one.
 */
export interface TransformCancellation {
  readonly signal: AbortSignal
}

// Framing and connection management are the proxy's: a transform setting a hop-by-hop header
// could desync the message (request smuggling) or break an HTTP/2 client.
const TRANSFORM_REFUSED = HOP_BY_HOP

/** Thrown (as its cause) when a transform breaks a rule; the message is safe to log. */
function transformRefused (details: string, cause?: unknown): ProxyError {
  return new ProxyError('proxy_internal_error', 'A request transform failed.', { details, cause })
}

/**
 * The transforms that apply to `request` toward `destination` (those whose `appliesTo` says so,
 * and those without one): `transforms` itself when all do, as most requests find.
 * @throws ProxyError 500 `proxy_internal_error` when an `appliesTo` throws.
 */
export function transformsFor (
  transforms: readonly ForwardProxyRequestTransform[],
  request: FastifyRequest,
  destination: ForwardProxyDestination
): readonly ForwardProxyRequestTransform[] {
  let applying: ForwardProxyRequestTransform[] | null = null
  for (let index = 0; index < transforms.length; index++) {
    const transform = transforms[index] as ForwardProxyRequestTransform
    if (transform.appliesTo === undefined) {
      applying?.push(transform)
      continue
    }
    let applies: boolean
    try {
      applies = transform.appliesTo(request, destination) === true
    } catch (error) {
      throw transformRefused('transform appliesTo threw', error)
    }
    if (applies) applying?.push(transform)
    else applying ??= transforms.slice(0, index)
  }
  return applying ?? transforms
}

/** True when one of `transforms` edits requests (has a `transformRequest`). */
export function editsRequests (transforms: readonly ForwardProxyRequestTransform[]): boolean {
  return transforms.some((transform) => transform.transformRequest !== undefined)
}

/**
 * Runs every `transformRequest` in registration order on a copy of the built request (hop-by-hop
 * headers removed, Via added) and returns the headers to send: the built list untouched when no transform edits
 * requests (callers that check {@link editsRequests} first need not wait for it). A transform that throws a `ProxyError`
 * refuses the request with that error's status
 * and `Proxy-Status`. Throws 500 `proxy_internal_error` when a transform throws anything else,
 * changes the method or the path, sets a `Host` for another authority, adds a framing header,
 * changes `Content-Length`, or leaves a header that is not a valid field.
 */
export async function transformOutgoingRequest (
  transforms: readonly ForwardProxyRequestTransform[],
  request: FastifyRequest,
  destination: ForwardProxyDestination,
  built: BuiltRequest,
  cancellation: TransformCancellation
): Promise<string[] | HeaderRecord> {
  if (!editsRequests(transforms)) return built.headers
  if (transforms.every(editsCheckedAtStart)) {
    // Their edits were checked when the rules were compiled and they never read the signal:
    // the head is edited in place, with no copy to compare, no checks and no AbortController.
    const outgoing: ForwardProxyOutgoingRequest = { method: request.method, path: built.path, headers: headerRecordOf(built.headers) }
    for (const transform of transforms) await transform.transformRequest?.(request, destination, outgoing, NEVER_ABORTED)
    return outgoing.headers
  }
  const original = headerRecordOf(built.headers)
  const outgoing: ForwardProxyOutgoingRequest = { method: request.method, path: built.path, headers: copyHeaderRecord(original) }
  for (const transform of transforms) {
    if (transform.transformRequest === undefined) continue
    try {
      await transform.transformRequest(request, destination, outgoing, cancellation.signal)
    } catch (error) {
      // A transform that answers with its own ProxyError decided the request: unless it names a
      // rule of its own (a built-in one does), the access line names the transforms.
      if (isProxyError(error)) throw isMarkedRefusal(error) ? error : refusedBy('transforms', error)
      throw transformRefused('request transform threw', error)
    }
  }
  if (outgoing.method !== request.method) throw transformRefused('request transform changed the method')
  if (outgoing.path !== built.path) throw transformRefused('request transform changed the request target')
  const headers = outgoing.headers
  const bad = invalidHeader(headers, TRANSFORM_REFUSED)
  if (bad !== null) throw transformRefused('request transform set an invalid or reserved header', new Error(`header "${bad}"`))
  if (headers['content-length'] !== undefined && String(headers['content-length']) !== String(original['content-length'])) {
    throw transformRefused('request transform changed content-length')
  }
  const host = headers.host
  if (host === undefined) {
    headers.host = original.host ?? ''
  } else if (typeof host !== 'string' || !isEquivalentAuthority(host, destination, built.defaultPort)) {
    throw transformRefused('request transform set a Host for another authority')
  }
  return headers
}

/**
 * Runs every `transformResponse` in registration order on the response head (hop-by-hop headers
 * removed, `Via` added) and returns the edited head. A transform that throws a `ProxyError`
 * answers with that error instead. Throws 500 `proxy_internal_error` when a transform throws
 * anything else, sets a status outside 200 to 599 other than the destination's, adds a framing
 * header, changes `Content-Length` or leaves a header that is not a valid field.
 */
export async function transformIncomingResponse (
  transforms: readonly ForwardProxyRequestTransform[],
  request: FastifyRequest,
  destination: ForwardProxyDestination,
  head: { readonly statusCode: number, readonly headers: HeaderRecord },
  cancellation: TransformCancellation
): Promise<{ statusCode: number, headers: HeaderRecord }> {
  if (!transforms.some((transform) => transform.transformResponse !== undefined)) return head
  const response: ForwardProxyIncomingResponse = { statusCode: head.statusCode, headers: copyHeaderRecord(head.headers) }
  if (transforms.every(editsCheckedAtStart)) {
    for (const transform of transforms) await transform.transformResponse?.(request, destination, response, NEVER_ABORTED)
    return response
  }
  for (const transform of transforms) {
    if (transform.transformResponse === undefined) continue
    try {
      await transform.transformResponse(request, destination, response, cancellation.signal)
    } catch (error) {
      if (isProxyError(error)) throw isMarkedRefusal(error) ? error : refusedBy('transforms', error)
      throw transformRefused('response transform threw', error)
    }
  }
  const { statusCode, headers } = response
  if (statusCode !== head.statusCode && !(Number.isInteger(statusCode) && statusCode >= 200 && statusCode <= 599)) {
    throw transformRefused('response transform set an invalid status')
  }
  const bad = invalidHeader(headers, TRANSFORM_REFUSED)
  if (bad !== null) throw transformRefused('response transform set an invalid or reserved header', new Error(`header "${bad}"`))
  if (headers['content-length'] !== undefined && String(headers['content-length']) !== String(head.headers['content-length'])) {
    throw transformRefused('response transform changed content-length')
  }
  return { statusCode, headers }
}

/**
 * Returns the first header a transform left unusable (a name that is not a lower-case token,
 * a value that is not a string or holds a character Node refuses in a field value (CR, LF, NUL,
 * other controls, DEL, anything past U+00FF), or one of `refused`), or null when all are fine.
 */
function invalidHeader (headers: HeaderRecord, refused: ReadonlySet<string>): string | null {
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
function headerRecordOf (flat: readonly string[]): HeaderRecord {
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
function copyHeaderRecord (headers: Readonly<Record<string, string | string[] | undefined>>): HeaderRecord {
  const copy = Object.create(null) as HeaderRecord
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) copy[name] = Array.isArray(value) ? [...value] : value
  }
  return copy
}

// Rule values become header field values as given, so they are checked against what Node accepts
// in one (UNSAFE_VALUE) at start-up, instead of failing every matching request.

// Framing and routing are the proxy's: a rule changing them would break or re-route the message.
const REQUEST_NAMES_REFUSED: ReadonlySet<string> = new Set([...HOP_BY_HOP, 'host', 'content-length'])
const RESPONSE_NAMES_REFUSED: ReadonlySet<string> = new Set([...HOP_BY_HOP, 'content-length'])

interface CompiledRule {
  readonly hosts: HostPattern[]
  readonly set: ReadonlyArray<readonly [string, string]>
  readonly remove: readonly string[]
  readonly setResponse: ReadonlyArray<readonly [string, string]>
  readonly removeResponse: readonly string[]
  readonly tlsOnly: boolean
}

/**
 * The built-in header transform (the configuration file's `headers` rules): for every rule
 * whose hosts match the destination, in rule order, request headers are removed then set
 * before the request leaves, and response headers removed then set before the head reaches
 * the client. Header names are matched case-insensitively. Given to forwardProxy (as the bundled
 * server does) it applies to intercepted requests and to `http://` forwarding alike (where a
 * `tlsOnly` rule that sets headers answers 403), except that `set` headers are never added to a
 * TRACE, whose response echoes the request.
 * @throws ForwardProxyRuleError naming the first unusable rule entry.
 */
export function createHeaderRulesTransform (rules: readonly ForwardProxyHeaderRule[]): ForwardProxyRequestTransform {
  if (!Array.isArray(rules)) throw new ForwardProxyRuleError('header rules must be an array')
  const compiled = rules.map((rule, index) => compileRule(rule, `headers[${index}]`))
  const matching = rulesByHost(compiled)
  const transform: ForwardProxyRequestTransform & { [NAMES_HOST]: (host: string) => boolean, [CHECKED_AT_START]: true } = {
    [NAMES_HOST]: (host: string) => matching(host).length > 0,
    [CHECKED_AT_START]: true,
    appliesTo: (_request, destination) => matching(destination.host).length > 0
  }
  // Each side is there only when a rule edits it: rules that only inject request headers (most
  // of them) leave the response head untouched, with no copy and no turn of the loop.
  if (compiled.some((rule) => rule.set.length > 0 || rule.remove.length > 0)) transform.transformRequest = editRequest
  if (compiled.some((rule) => rule.setResponse.length > 0 || rule.removeResponse.length > 0)) transform.transformResponse = editResponse
  return transform

  function editRequest (request: FastifyRequest, destination: ForwardProxyDestination, outgoing: ForwardProxyOutgoingRequest): void {
    // A TRACE is answered with the request it received: a header set here (an injected
    // credential) would come back to the client in the body.
    const echoed = outgoing.method === 'TRACE'
    const rules = matching(destination.host)
    if (!echoed && request.interception === null && rules.some((rule) => rule.tlsOnly && rule.set.length > 0)) {
      throw refusedBy('headers[].tlsOnly', new ProxyError('http_request_denied', 'The proxy sends the credentials for this destination over TLS only: use https://.', { status: 403, details: 'credentials are not sent over plain http' }))
    }
    for (const rule of rules) {
      for (const name of rule.remove) Reflect.deleteProperty(outgoing.headers, name)
      if (!echoed) for (const [name, value] of rule.set) outgoing.headers[name] = value
    }
  }

  function editResponse (_request: FastifyRequest, destination: ForwardProxyDestination, response: ForwardProxyIncomingResponse): void {
    for (const rule of matching(destination.host)) {
      for (const name of rule.removeResponse) Reflect.deleteProperty(response.headers, name)
      for (const [name, value] of rule.setResponse) response.headers[name] = value
    }
  }
}

// Marks a transform whose edits are checked when it is built (the header rules: names that are
// not the proxy's, values Node accepts) and that never reads its AbortSignal.
const CHECKED_AT_START = Symbol('edits checked at start')

/** True when `transform`'s edits were checked when it was built (a header-rules transform). */
function editsCheckedAtStart (transform: ForwardProxyRequestTransform): boolean {
  return (transform as { [CHECKED_AT_START]?: true })[CHECKED_AT_START] === true
}

// What transforms whose edits were checked at start get for a signal: they never read it.
const NEVER_ABORTED = new AbortController().signal

// Where a header-rules transform says which hosts its rules name, kept off the public type.
const NAMES_HOST = Symbol('header rules name host')

/** True when `transform` is a header-rules transform with a rule for `host`. */
export function headerRulesName (transform: ForwardProxyRequestTransform, host: string): boolean {
  const namesHost = (transform as { [NAMES_HOST]?: (host: string) => boolean })[NAMES_HOST]
  return namesHost?.(host) === true
}

// Hosts whose matching rules are kept; past it the cache starts again (a client can name any host).
const MAX_CACHED_HOSTS = 1024

/** The rules that match a host, in rule order, each host's list computed once. */
function rulesByHost (rules: readonly CompiledRule[]): (host: string) => readonly CompiledRule[] {
  const cache = new Map<string, readonly CompiledRule[]>()
  return (host) => {
    let matching = cache.get(host)
    if (matching === undefined) {
      matching = rules.filter((rule) => matchesAny(rule.hosts, host))
      if (cache.size >= MAX_CACHED_HOSTS) cache.clear()
      cache.set(host, matching)
    }
    return matching
  }
}

function compileRule (rule: ForwardProxyHeaderRule, path: string): CompiledRule {
  if (typeof rule !== 'object' || rule === null) throw new ForwardProxyRuleError(`${path} must be an object`)
  return {
    hosts: compileHostPatterns(rule.hosts, `${path}.hosts`),
    set: compileSet(rule.set, `${path}.set`, REQUEST_NAMES_REFUSED),
    remove: compileNames(rule.remove, `${path}.remove`, REQUEST_NAMES_REFUSED),
    setResponse: compileSet(rule.setResponse, `${path}.setResponse`, RESPONSE_NAMES_REFUSED),
    removeResponse: compileNames(rule.removeResponse, `${path}.removeResponse`, RESPONSE_NAMES_REFUSED),
    tlsOnly: compileTlsOnly(rule.tlsOnly, `${path}.tlsOnly`)
  }
}

function compileTlsOnly (value: unknown, path: string): boolean {
  if (value !== undefined && typeof value !== 'boolean') throw new ForwardProxyRuleError(`${path} must be a boolean`)
  return value === true
}

function compileNames (names: readonly string[] | undefined, path: string, refused: ReadonlySet<string>): string[] {
  if (names === undefined) return []
  if (!Array.isArray(names)) throw new ForwardProxyRuleError(`${path} must be an array of header names`)
  return names.map((name, index) => headerName(name, `${path}[${index}]`, refused))
}

function compileSet (values: Readonly<Record<string, string>> | undefined, path: string, refused: ReadonlySet<string>): Array<[string, string]> {
  if (values === undefined) return []
  if (typeof values !== 'object' || values === null || Array.isArray(values)) throw new ForwardProxyRuleError(`${path} must map header names to values`)
  return Object.entries(values).map(([name, value]) => {
    const lower = headerName(name, `${path}.${name}`, refused)
    // The value may be a secret (an injected credential): never quote it in the message.
    if (typeof value !== 'string' || UNSAFE_VALUE.test(value)) throw new ForwardProxyRuleError(`${path}.${lower} must be a string of characters allowed in a header value (tab, visible ASCII, space, U+0080 to U+00FF): no line breaks, controls, DEL or characters past U+00FF`)
    return [lower, value]
  })
}

function headerName (name: unknown, path: string, refused: ReadonlySet<string>): string {
  if (typeof name !== 'string' || !TOKEN.test(name)) throw new ForwardProxyRuleError(`${path} is not a valid header name`)
  const lower = name.toLowerCase()
  if (refused.has(lower)) throw new ForwardProxyRuleError(`${path}: the proxy manages "${lower}" itself; a rule cannot change it`)
  return lower
}

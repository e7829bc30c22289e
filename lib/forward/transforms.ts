// Request and response transforms: how they run on a copy of the head and what they may not
// change (the header rules, checked when compiled, edit the flat head instead).

import type { FastifyRequest } from 'fastify'
import type { ForwardProxyDestination } from '../../types/destination'
import type {
  ForwardProxyIncomingResponse,
  ForwardProxyOutgoingRequest,
  ForwardProxyRequestTransform
} from '../../types/interception'
import { isProxyError, ProxyError } from '../protocol/errors'
import { isMarkedRefusal, refusedBy } from '../protocol/refusals'
import { isEquivalentAuthority } from '../protocol/hosts'
import { HOP_BY_HOP, UNSAFE_VALUE, TOKEN } from './outgoing-head'
import { editsCheckedAtStart, editsHeadOnly, headEditOf } from './header-rules'

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

/** Thrown (as its cause) when a request transform breaks a rule; the message is safe to log. */
function transformRefused (details: string, cause?: unknown): ProxyError {
  return new ProxyError('proxy_internal_error', 'A request transform failed.', { details, cause })
}

/** The same for a response transform. */
function responseTransformRefused (details: string, cause?: unknown): ProxyError {
  return new ProxyError('proxy_internal_error', 'A response transform failed.', { details, cause })
}

/**
 * Moves every header a transform named with capitals (`X-Tenant`) to its lower-case name, where
 * the proxy and the other transforms look for it, replacing what that name held: the assignment
 * meant to set the field. A header record's names are lower case everywhere else.
 */
function lowerCaseNames (headers: HeaderRecord): void {
  if (typeof headers !== 'object' || headers === null) return
  for (const name of Object.keys(headers)) {
    const lower = name.toLowerCase()
    if (lower === name) continue
    const value = headers[name]
    Reflect.deleteProperty(headers, name)
    if (value !== undefined) headers[lower] = value
  }
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
  // Built only once a transform is left out and a later one applies: a request that meets
  // none of them (a host no rule names, the usual case) gets the shared empty list.
  let applying: ForwardProxyRequestTransform[] | null = null
  let leftOut = false
  for (let index = 0; index < transforms.length; index++) {
    const transform = transforms[index] as ForwardProxyRequestTransform
    let applies = true
    if (transform.appliesTo !== undefined) {
      try {
        applies = transform.appliesTo(request, destination) === true
      } catch (error) {
        throw transformRefused('transform appliesTo threw', error)
      }
    }
    if (!applies) {
      if (!leftOut && index > 0) applying = transforms.slice(0, index)
      leftOut = true
    } else if (leftOut) {
      (applying ??= []).push(transform)
    }
  }
  return leftOut ? applying ?? NO_TRANSFORMS : transforms
}

const NO_TRANSFORMS: readonly ForwardProxyRequestTransform[] = Object.freeze([])

/** True when one of `transforms` edits requests (has a `transformRequest`). */
function editsRequests (transforms: readonly ForwardProxyRequestTransform[]): boolean {
  return transforms.some((transform) => transform.transformRequest !== undefined)
}

/**
 * Runs every `transformRequest` in registration order on a copy of the built request (hop-by-hop
 * headers removed, Via added) and returns the headers to send: the built list untouched when no
 * transform edits requests, and an edited list when only header rules edit it (see
 * {@link createHeaderRulesTransform}), both at once, without a promise. A transform that throws a `ProxyError` refuses the
 * request with that error's status and `Proxy-Status`. Throws (or rejects with) 500
 * `proxy_internal_error` when a transform throws anything else, changes the method or the path,
 * sets a `Host` for another authority, adds a framing header, changes `Content-Length`, or
 * leaves a header that is not a valid field.
 */
export function transformOutgoingRequest (
  transforms: readonly ForwardProxyRequestTransform[],
  request: FastifyRequest,
  destination: ForwardProxyDestination,
  built: BuiltRequest,
  cancellation: TransformCancellation
): string[] | HeaderRecord | Promise<HeaderRecord> {
  if (!editsRequests(transforms)) return built.headers
  if (!editsHeadOnly(transforms)) return transformThroughCopy(transforms, request, destination, built, cancellation)
  // Their edits were checked when the rules were compiled and they never read the signal: the
  // flat head is edited as it is, with no header object, no copy to compare and no promise.
  let headers = built.headers
  for (const transform of transforms) {
    const edit = headEditOf(transform)
    if (edit !== undefined) headers = edit(request, destination, headers)
  }
  return headers
}

async function transformThroughCopy (
  transforms: readonly ForwardProxyRequestTransform[],
  request: FastifyRequest,
  destination: ForwardProxyDestination,
  built: BuiltRequest,
  cancellation: TransformCancellation
): Promise<HeaderRecord> {
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
  lowerCaseNames(headers)
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
      throw responseTransformRefused('response transform threw', error)
    }
  }
  const { statusCode, headers } = response
  lowerCaseNames(headers)
  if (statusCode !== head.statusCode && !(Number.isInteger(statusCode) && statusCode >= 200 && statusCode <= 599)) {
    throw responseTransformRefused('response transform set an invalid status')
  }
  const bad = invalidHeader(headers, TRANSFORM_REFUSED)
  if (bad !== null) throw responseTransformRefused('response transform set an invalid or reserved header', new Error(`header "${bad}"`))
  if (headers['content-length'] !== undefined && String(headers['content-length']) !== String(head.headers['content-length'])) {
    throw responseTransformRefused('response transform changed content-length')
  }
  return { statusCode, headers }
}

/**
 * Returns the first header a transform left unusable (a name that is not a token,
 * a value that is not a string or holds a character Node refuses in a field value (CR, LF, NUL,
 * other controls, DEL, anything past U+00FF), or one of `refused`), or null when all are fine.
 */
function invalidHeader (headers: HeaderRecord, refused: ReadonlySet<string>): string | null {
  if (typeof headers !== 'object' || headers === null) return 'headers'
  for (const [name, value] of Object.entries(headers)) {
    if (!TOKEN.test(name) || refused.has(name)) return name
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

// What transforms whose edits were checked at start get for a signal: they never read it.
const NEVER_ABORTED = new AbortController().signal

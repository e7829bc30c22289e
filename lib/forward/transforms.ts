import type { FastifyRequest } from 'fastify'
import type { ForwardProxyDestination } from '../../types/destination'
import type {
  ForwardProxyIncomingResponse,
  ForwardProxyOutgoingRequest,
  ForwardProxyRequestTransform
} from '../../types/interception'
import { ProxyError } from '../diagnostics/proxy-error'
import { isEquivalentAuthority } from './equivalent-authority'
import { copyHeaderRecord, headerRecordOf, invalidHeader, type HeaderRecord } from './header-validity'

/** The request the proxy built, before transforms. */
export interface BuiltRequest {
  readonly method: string
  readonly path: string
  /** Flat name/value pairs as sent when no transform edits them. */
  readonly headers: string[]
  /** The port an omitted `Host` port stands for (80 for http, 443 for https). */
  readonly defaultPort: number
}

// Framing and connection management are the proxy's; a transform adding them could desync the
// message (request smuggling) or break an HTTP/2 client.
/**
 * Where a transform's AbortSignal comes from: read only when a transform runs, so a request
 * with no transforms never makes one.
 */
export interface TransformCancellation {
  readonly signal: AbortSignal
}

const REQUEST_REFUSED = new Set([
  'connection', 'proxy-connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade',
  'proxy-authorization', 'http2-settings'
])
const RESPONSE_REFUSED = new Set([
  'connection', 'proxy-connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade',
  'http2-settings'
])

/** Thrown (as its cause) when a transform breaks a rule; the message is safe to log. */
function transformRefused (details: string, cause?: unknown): ProxyError {
  return new ProxyError('proxy_internal_error', 'A request transform failed.', { details, cause })
}

/**
 * Runs every `transformRequest` in registration order on a copy of the built request (hop-by-hop
 * headers removed, Via added) and returns the headers to send: the built list untouched when no transform edits
 * requests. Throws 500 `proxy_internal_error` when a transform throws, changes the method or the
 * path, sets a `Host` for another authority, adds a framing header, changes
 * `Content-Length`, or leaves a header that is not a valid field.
 */
export async function transformOutgoingRequest (
  transforms: readonly ForwardProxyRequestTransform[],
  request: FastifyRequest,
  destination: ForwardProxyDestination,
  built: BuiltRequest,
  cancellation: TransformCancellation
): Promise<string[] | HeaderRecord> {
  if (!transforms.some((transform) => transform.transformRequest !== undefined)) return built.headers
  const original = headerRecordOf(built.headers)
  const outgoing: ForwardProxyOutgoingRequest = { method: built.method, path: built.path, headers: copyHeaderRecord(original) }
  for (const transform of transforms) {
    if (transform.transformRequest === undefined) continue
    try {
      await transform.transformRequest(request, destination, outgoing, cancellation.signal)
    } catch (error) {
      throw transformRefused('request transform threw', error)
    }
  }
  if (outgoing.method !== built.method) throw transformRefused('request transform changed the method')
  if (outgoing.path !== built.path) throw transformRefused('request transform changed the request target')
  const headers = outgoing.headers
  const bad = invalidHeader(headers, REQUEST_REFUSED)
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
 * removed, `Via` added) and returns the edited head. Throws 500 `proxy_internal_error` when a
 * transform throws, sets a status outside 200 to 599 other than the destination's, adds a
 * framing header, changes `Content-Length` or leaves a header that is not a valid field.
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
  for (const transform of transforms) {
    if (transform.transformResponse === undefined) continue
    try {
      await transform.transformResponse(request, destination, response, cancellation.signal)
    } catch (error) {
      throw transformRefused('response transform threw', error)
    }
  }
  const { statusCode, headers } = response
  if (statusCode !== head.statusCode && !(Number.isInteger(statusCode) && statusCode >= 200 && statusCode <= 599)) {
    throw transformRefused('response transform set an invalid status')
  }
  const bad = invalidHeader(headers, RESPONSE_REFUSED)
  if (bad !== null) throw transformRefused('response transform set an invalid or reserved header', new Error(`header "${bad}"`))
  if (headers['content-length'] !== undefined && String(headers['content-length']) !== String(head.headers['content-length'])) {
    throw transformRefused('response transform changed content-length')
  }
  return { statusCode, headers }
}

// Forwards one request (absolute-form `http://`, or one inside an intercepted tunnel) to its
// destination and streams the response back: body counting, client departure and inactivity
// timeout.

import type { FastifyReply, FastifyRequest } from 'fastify'
import { Transform, type Readable } from 'node:stream'
import { Http2ServerRequest } from 'node:http2'
import type { ProxyRuntime } from '../core/runtime'
import { ProxyError } from '../protocol/errors'
import { errorCode, proxyErrorFromNetworkError } from '../protocol/network-errors'
import { refusedBy } from '../protocol/refusals'
import { formatAuthority } from '../protocol/hosts'
import type { AbsoluteTarget, AbsoluteTargetProblem } from '../core/proxy-request'
import { markForwardedResponse } from './forwarded-response'
import { exchangeWithDestination } from './destination-exchange'
import { scrubbedBody } from './scrubbed-response'
import { buildClientResponseHeaders, type ReceivedHeaders } from './outgoing-head'
import { placeSecrets, prepareOutgoingRequest, type ForwardTarget } from './outgoing-request'
import { transformOutgoingRequest, type HeaderRecord } from './transforms'
import type { UpstreamProxy } from '../security/upstream-proxy'
import { Cancellation } from '../security/destination-connector'
import { forwardNotesOf, scrubbedSecretsOf } from '../telemetry/request-telemetry'
import type { CaptureRecord } from '../capture/capture-record'

const TARGET_PROBLEMS: Record<AbsoluteTargetProblem, string> = {
  'https-scheme': 'https:// targets must use CONNECT.',
  'unsupported-scheme': 'Only http:// targets can be forwarded.',
  malformed: 'The request target is not a valid absolute http:// URL.'
}

/**
 * Forwards an absolute-form `http://` request: see {@link forwardRequest}.
 * Throws ProxyError for a target that cannot be forwarded and anything answered by the proxy.
 */
export function forwardAbsoluteRequest (
  request: FastifyRequest,
  reply: FastifyReply,
  target: AbsoluteTarget | AbsoluteTargetProblem,
  runtime: ProxyRuntime
): Promise<void> {
  if (typeof target === 'string') {
    throw new ProxyError('http_request_error', TARGET_PROBLEMS[target], { details: target })
  }
  return forwardRequest(request, reply, runtime, {
    destination: target.destination,
    scheme: 'http',
    pathAndQuery: target.pathAndQuery,
    applyMaxForwards: true
  })
}

/**
 * Forwards one request to `target` and streams the response back: what leaves is decided by
 * `prepareOutgoingRequest` (loop and policy checks, Max-Forwards when asked, the head built from
 * the request and the application hooks' edits), then one of the
 * `limits.maxConcurrentRequests` slots is taken, the transforms' `transformRequest` run, secrets
 * are put in place of their placeholders (`placeSecrets`), and the request and its body go over
 * undici (validated TLS for `https`; see `exchangeWithDestination`). The response head is
 * filtered the same way. A body that came with the head is sent whole; any other gets an
 * inactivity timer (tunnelIdleTimeout for `text/event-stream`, httpActivityTimeout otherwise) and
 * streams. Both are sent as the reply, the transforms' `transformResponse` running on the head in
 * its onSend hook
 * (lib/forward/forwarded-response.ts). Requests always leave over HTTP/1.1.
 *
 * Used for absolute-form `http://` requests and for requests inside intercepted tunnels.
 * Throws ProxyError for anything answered by the proxy itself; the proxy route's error handler
 * turns it into a status and `Proxy-Status`.
 */
export async function forwardRequest (
  request: FastifyRequest,
  reply: FastifyReply,
  runtime: ProxyRuntime,
  target: ForwardTarget
): Promise<void> {
  const prepared = prepareOutgoingRequest(request, runtime, target)
  // With shared limits the user's request rate is counted in their store, before anything leaves.
  const counted = runtime.userPolicy.countInStore(request.proxyUser)
  if (counted !== null) await counted
  if (prepared.kind === 'answer-options') {
    reply.code(200).header('proxy-status', runtime.settings.pseudonym).header('content-length', '0').send()
    return
  }
  const { destination, scheme } = target
  const { received, via, transforms } = prepared

  // A client that left while the app's hooks ran has already had its 'close': dial nothing.
  if (clientGone(reply)) throw clientLeft()
  const departure = watchClientDeparture(reply.raw, takeRequestSlot(runtime))

  // Without request transforms, or with header rules only, nothing is awaited: one turn of the
  // loop less per request.
  const edited = transformOutgoingRequest(transforms, request, destination, prepared, departure)
  const transformed = edited instanceof Promise ? await edited : edited
  if (departure.aborted) throw clientLeft()
  const placed = placeSecrets(request, prepared, transformed, target)
  // Without secrets nothing is awaited: one turn of the loop less per request.
  const { path, headers, scrubber } = placed instanceof Promise ? await placed : placed
  if (departure.aborted) throw clientLeft()

  const { upstreams } = runtime.connector
  // No await without upstream proxies: one turn of the loop less per request.
  const upstreamProxy = scheme === 'http' && upstreams != null ? await upstreams.routeFor(destination, request, 'http') : null
  const counts = forwardNotesOf(request)
  const { capture } = counts
  const authority = formatAuthority(destination.host, destination.port)
  capture?.noteSent(scheme, destination, prepared.path, transformed)
  const body = hasBody(request, received)
    ? countedBody(request.raw, (chunk) => { counts.bytesIn += chunk.length }, runtime.settings.limits.httpActivityTimeout, capture)
    : null
  // A scrubbed body is searched as it flows: it always comes as a stream.
  const exchange = { wholeBody: scrubber === null, cancellation: departure }
  const sent = upstreamProxy === null
    // `opaque`: the dispatcher notes there which pooled connection it gave the request to.
    ? exchangeWithDestination(scheme === 'https' ? runtime.tlsDispatcher : runtime.dispatcher, { origin: `${scheme}://${authority}`, path, method: request.method, headers, body, opaque: counts }, exchange)
    // Absolute form to the upstream proxy, with its own credentials.
    : exchangeWithDestination(runtime.upstreamDispatcher, { origin: `${upstreamProxy.protocol}//${upstreamProxy.label}`, path: `http://${authority}${path}`, method: request.method, headers: withUpstreamAuthorization(headers, upstreamProxy), body }, exchange)
  if (capture !== undefined) capture.dispatchedAt = performance.now()
  const response = await sent.catch((error: unknown) => {
    const mapped = fromDispatchError(error)
    throw upstreamProxy === null || mapped.nextHop !== undefined
      ? mapped
      : new ProxyError(mapped.errorType, mapped.message, {
        status: mapped.status,
        ...(mapped.details === undefined ? {} : { details: mapped.details }),
        nextHop: upstreamProxy.label,
        cause: error
      })
  })
  // The connection the response came on: a reused one reports the address it was dialed to. Read
  // now, before the pool can give that connection's slot to a new dial.
  counts.dialed = counts.pooledOn?.lastDialed
  if (capture !== undefined) capture.headAt = performance.now()
  if (upstreamProxy !== null && response.statusCode === 407) {
    // The upstream wants credentials this proxy does not have; passed on, the 407 would read as
    // this proxy asking the client for its own.
    if (!Buffer.isBuffer(response.body)) response.body.on('error', () => {}).destroy()
    throw new ProxyError('destination_unavailable', 'The upstream proxy refused the request (407).', { status: 502, details: 'upstream proxy answered 407', nextHop: upstreamProxy.label })
  }

  // The response transforms, the application's onSend hooks and the proxy route's last one
  // (which scrubs secrets from the head) run on this head before it is written.
  const head = buildClientResponseHeaders(response.headers, via)
  if (request.method === 'HEAD' || response.statusCode === 204 || response.statusCode === 304) {
    discardBody(response.body)
    reply.code(response.statusCode).headers(head)
    markForwardedResponse(reply, { body: null, destination, transforms, cancellation: departure, scrubber })
    reply.send()
    return
  }
  if (Buffer.isBuffer(response.body)) {
    // Complete already: no stream, no inactivity timer.
    counts.bytesOut += response.body.length
    capture?.tapResponseBody().takeWhole(response.body)
    reply.code(response.statusCode).headers(head)
    markForwardedResponse(reply, { body: response.body, destination, transforms, cancellation: departure, scrubber })
    reply.send(response.body)
    return
  }
  const contentType = headerText(response.headers['content-type']) ?? ''
  const idleTimeout = contentType.toLowerCase().startsWith('text/event-stream')
    ? runtime.settings.limits.tunnelIdleTimeout
    : runtime.settings.limits.httpActivityTimeout
  let responseBody = withInactivityTimeout(response.body, idleTimeout, (bytes) => { counts.bytesOut += bytes })
  if (scrubber !== null) {
    try {
      responseBody = scrubbedBody(responseBody, head, scrubber, scrubbedSecretsOf(request))
    } catch (error) {
      response.body.destroy()
      throw error
    }
  }
  // The body as the client gets it: after the scrubber, when there is one.
  capture?.tapResponseBody().follow(responseBody)
  reply.code(response.statusCode).headers(head)
  markForwardedResponse(reply, { body: responseBody, destination, transforms, cancellation: departure, scrubber })
  reply.send(responseBody)
}

/**
 * Takes one of the `limits.maxConcurrentRequests` slots; returns what gives it back, to call
 * when the client's response closes (sent, failed or abandoned: it emits 'close' once).
 */
function takeRequestSlot (runtime: ProxyRuntime): () => void {
  const release = runtime.forwardedRequests.tryReserve()
  if (release === null) {
    throw refusedBy('limits.maxConcurrentRequests', new ProxyError('connection_limit_reached', 'The proxy has reached its limit of forwarded requests in flight; try again later.'))
  }
  return release
}

/** Lets a body the client will not get go: a stream is read to its end (the connection stays reusable). */
function discardBody (body: Buffer | Readable): void {
  if (Buffer.isBuffer(body)) return
  body.on('error', () => {})
  body.resume()
}

function clientLeft (): ProxyError {
  return new ProxyError('connection_terminated', 'The client went away before the request was forwarded.')
}

/** The request's headers plus the upstream proxy's `Proxy-Authorization`, when it has credentials. */
function withUpstreamAuthorization (headers: string[] | HeaderRecord, upstream: UpstreamProxy): string[] | HeaderRecord {
  if (upstream.authorization === undefined) return headers
  if (Array.isArray(headers)) return [...headers, 'proxy-authorization', upstream.authorization]
  return { ...headers, 'proxy-authorization': upstream.authorization }
}

/** undici refuses a request it cannot send (bad header from the proxy's side) synchronously: our fault, not the destination's. */
function fromDispatchError (error: unknown): ProxyError {
  if (errorCode(error) === 'UND_ERR_INVALID_ARG') {
    return new ProxyError('proxy_internal_error', 'The proxy built a request it cannot send.', { cause: error })
  }
  return proxyErrorFromNetworkError(error)
}

/** True when the client's connection (HTTP/1.1) or stream (HTTP/2) is already closed. */
function clientGone (reply: FastifyReply): boolean {
  const raw: { destroyed?: boolean, stream?: { destroyed: boolean } } = reply.raw
  return raw.destroyed === true || raw.stream?.destroyed === true
}

function headerText (value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value
}

/**
 * Passes a request body through unchanged, telling `onChunk` of each chunk (the access log's
 * bytes from the client) and, when the request is recorded, `capture` (its first bytes, and when
 * the body ended). A 'data' listener on the client's request itself
 * would start it flowing before undici reads it, losing the first chunks. Wired by hand
 * rather than with `stream.pipeline` (an AbortController per request): an error on `body`
 * fails the copy undici reads, and the copy closing early (undici gave up) destroys `body`.
 * A body that moves no byte for `idleTimeout` milliseconds fails the copy, which aborts the
 * request to the destination: 408 `http_request_error` when the client stopped sending, 504
 * `http_response_timeout` when the destination stopped reading. Neither side can hold the other's
 * connection for longer than that.
 */
function countedBody (body: Readable, onChunk: (chunk: Buffer) => void, idleTimeout: number, capture: CaptureRecord | undefined): Readable {
  const tap = capture?.tapRequestBody()
  const counter = new Transform({
    transform (chunk: Buffer, _encoding, callback) {
      idle.refresh()
      onChunk(chunk)
      tap?.push(chunk)
      callback(null, chunk)
    }
  })
  let stalled = false
  const idle = setTimeout(() => {
    // Bytes waiting in the copy mean the destination stopped reading, not the client sending.
    const destinationStalled = counter.readableLength > 0 || counter.writableLength > 0
    // A client that stalled keeps its connection until the 408 is written (then it closes).
    stalled = !destinationStalled
    counter.destroy(destinationStalled
      ? new ProxyError('http_response_timeout', 'The destination stopped reading the request body.', { details: 'request body not read' })
      : new ProxyError('http_request_error', 'The client stopped sending its request body.', { status: 408, details: 'request body stalled' }))
  }, idleTimeout)
  idle.unref()
  body.on('error', (error) => counter.destroy(error))
  body.once('end', () => {
    clearTimeout(idle)
    if (capture !== undefined && tap !== undefined) {
      tap.complete = true
      capture.requestSentAt = performance.now()
    }
  })
  counter.once('close', () => {
    clearTimeout(idle)
    if (stalled) body.unpipe(counter)
    else if (!body.destroyed && !body.readableEnded) body.destroy()
  })
  body.pipe(counter)
  return counter
}

/**
 * True when the client's request carries a body: HTTP/1.1 framing (RFC 9112 section 6.3), or,
 * over HTTP/2, a HEADERS frame without END_STREAM (a body needs no Content-Length there).
 * Judged on the headers as received: what hooks did to `request.headers` cannot change framing.
 */
function hasBody (request: FastifyRequest, headers: ReceivedHeaders): boolean {
  const raw: unknown = request.raw
  if (raw instanceof Http2ServerRequest) return !raw.stream.endAfterHeaders
  if (headers['transfer-encoding'] !== undefined) return true
  const length = headers['content-length']
  return length !== undefined && length !== '0'
}

/** The part of a response (HTTP/1.1 or HTTP/2 compatibility) a departure watches. */
interface WatchedResponse {
  readonly writableFinished: boolean
  once: (event: 'close', listener: () => void) => unknown
}

/**
 * Says when the client left before its response was finished: aborted by the response's
 * `'close'` (sent, failed or abandoned, it closes once) unless the response had finished;
 * `onClose` (the request slot's release) is called on that 'close' in every case. It cancels
 * the exchange with the destination and is the transforms' cancellation; an AbortController per
 * forwarded request cost about 5% of the proxy's CPU on this path.
 */
function watchClientDeparture (response: WatchedResponse, onClose: () => void): Cancellation {
  const departure = new Cancellation()
  // One listener does both: each listener added and removed per request costs CPU.
  response.once('close', () => {
    onClose()
    if (!response.writableFinished) departure.abort()
  })
  return departure
}

/**
 * Arms `body` (a destination's response body, about to be sent as the reply) with an
 * inactivity timer: when no bytes arrive for `idleTimeout` it is destroyed with a read-timeout
 * ProxyError; the timer restarts on every chunk, so a slow but live stream is never cut.
 * `onBytes` hears the size of every chunk (for the access log). Returns `body` itself: no
 * stream is layered on it (a Transform per response cost measurable CPU on the forwarding
 * path). The body is paused before the listener is added, so nothing flows until the reply
 * pipes it; the reply destroys it when the client leaves.
 */
export function withInactivityTimeout (body: Readable, idleTimeout: number, onBytes?: (bytes: number) => void): Readable {
  const timer = setTimeout(() => {
    body.destroy(new ProxyError('connection_read_timeout', 'The destination stopped sending its response.'))
  }, idleTimeout)
  timer.unref()
  body.pause()
  body.on('data', (chunk: Buffer) => {
    timer.refresh()
    onBytes?.(chunk.length)
  })
  // The reply reports the error once it pipes the body; until then nothing else listens.
  body.on('error', () => {})
  body.once('close', () => clearTimeout(timer))
  return body
}

// Forwards one request (absolute-form `http://`, or one inside an intercepted tunnel) to its
// destination and streams the response back, step by step without a promise on the usual
// request; the request slot and the client's departure.

import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ProxyRuntime } from '../core/runtime'
import { ProxyError, asError } from '../protocol/errors'
import { errorCode, proxyErrorFromNetworkError } from '../protocol/network-errors'
import { refusedBy } from '../protocol/refusals'
import { cutResponse, isHttp2Response, resetByClient } from '../protocol/cut-response'
import { formatAuthority } from '../protocol/hosts'
import type { AbsoluteTarget, AbsoluteTargetProblem } from '../core/proxy-request'
import { markForwardedResponse } from './forwarded-response'
import { exchangeWithDestination, type DestinationResponse } from './destination-exchange'
import { scrubbedBody } from './scrubbed-response'
import { buildClientResponseHeaders, copyClientResponseHeaders } from './client-response-head'
import { abandonBody, countedBody, discardBody, hasBody, hasUnreadableTransferCoding, withInactivityTimeout } from './forwarded-bodies'
import { headersAsSent, placeSecrets, prepareOutgoingRequest, type ForwardTarget, type OutgoingDecision, type PreparedRequest, type RequestToSend } from './outgoing-request'
import { transformOutgoingRequest, type HeaderRecord } from './transforms'
import { isWebSocketUpgrade } from './websocket-upgrade'
import { relayEarlyHints, type EarlyHintsListener } from './early-hints'
import type { IncomingHeaders } from './client-response-head'
import { upstreamOrigin, type UpstreamProxy } from '../security/upstream-proxy'
import { Cancellation } from '../security/destination-connector'
import { finishAbandonedRequest, forwardNotesOf, noteProxyError, scrubbedSecretsOf } from '../telemetry/request-telemetry'
import type { SecretScrubber } from '../security/secret-scrubber'

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
): Promise<void> | undefined {
  if (typeof target === 'string') {
    throw new ProxyError('http_request_error', TARGET_PROBLEMS[target], { details: target })
  }
  // Upgrade is hop-by-hop: forwarded without it, the handshake would reach the destination as a
  // plain GET and fail there, in a way the client could not tell from a refusal of its own.
  if (isWebSocketUpgrade(request.method, request.raw.httpVersion, request.headers)) {
    // A client may send frames right behind its handshake: nothing after it is read as HTTP.
    ;(reply.raw as { shouldKeepAlive: boolean }).shouldKeepAlive = false
    throw new ProxyError('http_request_error', 'WebSockets are not relayed by http:// forwarding: open them through a CONNECT tunnel.', { status: 501, details: 'WebSocket over http:// forwarding' })
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
 * Nothing is awaited on the usual request: each step that may wait (a shared store's count,
 * asynchronous transforms, secrets, an upstream proxy's choice) is waited for only when it
 * returns a promise, and the destination's answer comes through a callback. What fails before
 * the first wait is thrown; what fails after it rejects the promise returned (undefined when
 * nothing was waited for); what fails once the request is with the destination is sent through
 * the reply ({@link sendForwardingFailure}). Every failure reaches the proxy route's error
 * handler, which turns it into a status and `Proxy-Status`.
 */
export function forwardRequest (
  request: FastifyRequest,
  reply: FastifyReply,
  runtime: ProxyRuntime,
  target: ForwardTarget
): Promise<void> | undefined {
  const prepared = prepareOutgoingRequest(request, runtime, target)
  // With shared limits the user's request rate is counted in their store, before anything leaves.
  const counted = runtime.userPolicy.countInStore(request.proxyUser)
  if (counted !== null) return counted.then(() => startForwarding(request, reply, runtime, target, prepared))
  return startForwarding(request, reply, runtime, target, prepared)
}

function startForwarding (
  request: FastifyRequest,
  reply: FastifyReply,
  runtime: ProxyRuntime,
  target: ForwardTarget,
  prepared: OutgoingDecision
): Promise<void> | undefined {
  if (prepared.kind === 'answer-options') {
    reply.code(200).header('proxy-status', runtime.settings.pseudonym).header('content-length', '0').send()
    return undefined
  }
  // A client that left while the app's hooks ran has already had its 'close': dial nothing.
  if (clientGone(reply)) throw clientLeft()
  const forwarding = new Forwarding(request, reply, runtime, target, prepared, watchClientDeparture(reply, takeRequestSlot(runtime)))
  const edited = transformOutgoingRequest(prepared.transforms, request, target.destination, prepared, forwarding.departure)
  return edited instanceof Promise ? edited.then((transformed) => forwarding.placeSecrets(transformed)) : forwarding.placeSecrets(edited)
}

/** One forwarded request once it has a request slot: its steps, in order, as methods. */
class Forwarding implements EarlyHintsListener {
  /** The response's scrubber, once the request is sent. */
  scrubber: SecretScrubber | null = null

  constructor (
    readonly request: FastifyRequest,
    readonly reply: FastifyReply,
    readonly runtime: ProxyRuntime,
    readonly target: ForwardTarget,
    readonly prepared: PreparedRequest,
    /** Aborts when the client leaves; the transforms' cancellation, and the exchange's. */
    readonly departure: Cancellation
  ) {}

  /** After the transforms: secrets put in place, waited for only when some can be there. */
  placeSecrets (transformed: string[] | HeaderRecord): Promise<void> | undefined {
    if (this.departure.aborted) throw clientLeft()
    const placed = placeSecrets(this.request, this.prepared, transformed, this.target)
    return placed instanceof Promise ? placed.then((sent) => this.route(transformed, sent)) : this.route(transformed, placed)
  }

  /** The upstream proxy an http:// request goes through, if any (none configured: nothing to wait for). */
  route (transformed: string[] | HeaderRecord, placed: RequestToSend): Promise<void> | undefined {
    if (this.departure.aborted) throw clientLeft()
    const { upstreams } = this.runtime.connector
    if (this.target.scheme !== 'http' || upstreams == null) {
      this.send(transformed, placed, null)
      return undefined
    }
    const chosen = upstreams.routeFor(this.target.destination, this.request, 'http')
    if (!(chosen instanceof Promise)) {
      this.send(transformed, placed, chosen)
      return undefined
    }
    return chosen.then((upstreamProxy) => {
      if (this.departure.aborted) throw clientLeft()
      this.send(transformed, placed, upstreamProxy)
    })
  }

  /** A 103 from the destination, before its final response. */
  earlyHints (headers: IncomingHeaders): void {
    relayEarlyHints(this.reply, headers, this.prepared.via, this.scrubber, scrubbedSecretsOf(this.request))
  }

  /** Sends the request and its body on; the response head comes to {@link Forwarding.answer}. */
  send (transformed: string[] | HeaderRecord, { path, headers, scrubber }: RequestToSend, upstreamProxy: UpstreamProxy | null): void {
    const { request, runtime, prepared } = this
    const { destination, scheme } = this.target
    const counts = forwardNotesOf(request)
    const { capture } = counts
    const authority = formatAuthority(destination.host, destination.port)
    capture?.noteSent(scheme, destination, prepared.path, headersAsSent(transformed, scrubber))
    const body = hasBody(request, prepared.received)
      ? countedBody(request.raw, (chunk) => { counts.bytesIn += chunk.length }, runtime.settings.limits.httpActivityTimeout, capture)
      : null
    this.scrubber = scrubber
    // A scrubbed body is searched as it flows: it always comes as a stream.
    const exchange = { wholeBody: scrubber === null, cancellation: this.departure, earlyHints: this }
    const answer = (error: Error | null, response: DestinationResponse | undefined): void => {
      try {
        // A client that left has its access line already, and nobody to answer.
        if (error !== null && this.departure.aborted) return
        if (error !== null) throw destinationFailure(error, upstreamProxy)
        this.answer(response as DestinationResponse, scrubber, upstreamProxy)
      } catch (failure) {
        sendForwardingFailure(this.reply, failure)
      }
    }
    if (upstreamProxy === null) {
      // `opaque`: the dispatcher notes there which pooled connection it gave the request to.
      exchangeWithDestination(scheme === 'https' ? runtime.tlsDispatcher : runtime.dispatcher, { origin: `${scheme}://${authority}`, path, method: request.method, headers, body, opaque: counts }, exchange, answer)
    } else {
      // Absolute form to the upstream proxy, with its own credentials.
      exchangeWithDestination(runtime.upstreamDispatcher, { origin: upstreamOrigin(upstreamProxy), path: `http://${authority}${path}`, method: request.method, headers: withUpstreamAuthorization(headers, upstreamProxy), body }, exchange, answer)
    }
    if (capture !== undefined) capture.dispatchedAt = performance.now()
  }

  /** Sends the destination's response as the reply. */
  answer (response: DestinationResponse, scrubber: SecretScrubber | null, upstreamProxy: UpstreamProxy | null): void {
    const { request, reply, runtime, departure } = this
    const { destination } = this.target
    const { transforms, via } = this.prepared
    const counts = forwardNotesOf(request)
    const { capture } = counts
    // The connection the response came on: a reused one reports the address it was dialed to. Read
    // now, before the pool can give that connection's slot to a new dial.
    counts.dialed = counts.pooledOn?.lastDialed
    if (capture !== undefined) capture.headAt = performance.now()
    if (upstreamProxy !== null && response.statusCode === 407) {
      // The upstream wants credentials this proxy does not have; passed on, the 407 would read as
      // this proxy asking the client for its own.
      abandonBody(response.body)
      throw new ProxyError('destination_unavailable', 'The upstream proxy refused the request (407).', { status: 502, details: 'upstream proxy answered 407', nextHop: upstreamProxy.label })
    }

    if (response.statusCode > 599) {
      // RFC 9110 section 15: a status code is 100 to 599; Node would refuse to write this one.
      abandonBody(response.body)
      throw new ProxyError('http_protocol_error', 'The destination sent an invalid response.', { details: 'invalid status code' })
    }

    // The response transforms, the application's onSend hooks and the proxy route's last one
    // (which scrubs secrets from the head) run on this head before it is written.
    if (request.method === 'HEAD' || response.statusCode === 204 || response.statusCode === 304) {
      discardBody(response.body)
      copyClientResponseHeaders(response.headers, via, reply.code(response.statusCode))
      // RFC 9110 section 8.6: a 204 carries no Content-Length (a 304's names the representation's).
      if (response.statusCode === 204) reply.removeHeader('content-length')
      markForwardedResponse(reply, { body: null, destination, transforms, cancellation: departure, scrubber })
      reply.send()
      return
    }
    if (hasUnreadableTransferCoding(response.headers)) {
      abandonBody(response.body)
      throw new ProxyError('http_response_transfer_coding', 'The destination sent a body in a transfer coding the proxy did not ask for.', { details: 'transfer coding other than chunked' })
    }
    if (Buffer.isBuffer(response.body)) {
      // Complete already: no stream, no inactivity timer.
      counts.bytesOut += response.body.length
      capture?.tapResponseBody().takeWhole(response.body)
      copyClientResponseHeaders(response.headers, via, reply.code(response.statusCode))
      markForwardedResponse(reply, { body: response.body, destination, transforms, cancellation: departure, scrubber })
      reply.send(response.body)
      return
    }
    const contentType = headerText(response.headers['content-type']) ?? ''
    const eventStream = contentType.toLowerCase().startsWith('text/event-stream')
    const idleTimeout = eventStream ? runtime.settings.limits.tunnelIdleTimeout : runtime.settings.limits.httpActivityTimeout
    let responseBody = withInactivityTimeout(response.body, idleTimeout, (bytes) => { counts.bytesOut += bytes })
    if (scrubber === null) {
      copyClientResponseHeaders(response.headers, via, reply.code(response.statusCode))
    } else {
      // The scrubber drops the length and coding of the head before it is set.
      const head = buildClientResponseHeaders(response.headers, via)
      try {
        responseBody = scrubbedBody(responseBody, head, scrubber, scrubbedSecretsOf(request))
      } catch (error) {
        response.body.destroy()
        throw error
      }
      reply.code(response.statusCode).headers(head)
    }
    // A body that fails once its head is out (the destination cut it, stopped sending, or the
    // scrubber failed) must read as cut; Fastify's own ending resets an HTTP/2 stream with
    // NO_ERROR. Before the head, Fastify hands the failure to the error handler, which answers it.
    const raw = reply.raw
    responseBody.once('error', (error) => {
      // The failure is the destination's (or the scrubber's), not the client's: its line says so.
      noteProxyError(request, proxyErrorFromNetworkError(error))
      if (isHttp2Response(raw) && raw.headersSent) cutResponse(raw)
    })
    // Fastify writes a streamed body's head with its first chunk. An event stream's client opens
    // (EventSource's 'open') on the head, and its first event may be long in coming: the head
    // goes as soon as Fastify has set it, when it pipes the body.
    if (eventStream) raw.once('pipe', () => { if (!raw.headersSent) raw.flushHeaders() })
    // The body as the client gets it: after the scrubber, when there is one.
    capture?.tapResponseBody().follow(responseBody)
    markForwardedResponse(reply, { body: responseBody, destination, transforms, cancellation: departure, scrubber })
    reply.send(responseBody)
  }
}

/**
 * Sends what a proxy request failed with through the reply to the proxy route's error handler,
 * as Fastify does for a handler's rejected promise (a non-Error becomes a 500); once the
 * response has ended there is nothing left to answer, and the failure is logged.
 */
export function sendForwardingFailure (reply: FastifyReply, error: unknown): void {
  if (reply.sent) {
    reply.log.error({ err: error }, 'proxy request failed after its response was sent')
    return
  }
  reply.send(asError(error))
}

/** What a failed exchange answers: the error mapped to a ProxyError, naming the upstream proxy when it went through one. */
function destinationFailure (error: Error, upstreamProxy: UpstreamProxy | null): ProxyError {
  const mapped = fromDispatchError(error)
  return upstreamProxy === null || mapped.nextHop !== undefined
    ? mapped
    : new ProxyError(mapped.errorType, mapped.message, {
      status: mapped.status,
      ...(mapped.details === undefined ? {} : { details: mapped.details }),
      nextHop: upstreamProxy.label,
      cause: error
    })
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
 * Says when the client left before its response was finished: aborted by the response's
 * `'close'` (sent, failed or abandoned, it closes once) unless the response had finished, when
 * the request's access line is written as abandoned (Fastify runs no onResponse hook for it);
 * `onClose` (the request slot's release) is called on that 'close' in every case. It cancels
 * the exchange with the destination and is the transforms' cancellation; an AbortController per
 * forwarded request cost about 5% of the proxy's CPU on this path.
 */
function watchClientDeparture (reply: FastifyReply, onClose: () => void): Cancellation {
  const departure = new Cancellation()
  const response = reply.raw
  // One listener does all: each listener added and removed per request costs CPU.
  response.once('close', () => {
    onClose()
    if (response.writableFinished && !resetByClient(response)) return
    finishAbandonedRequest(reply.request, reply)
    departure.abort()
  })
  return departure
}

import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ForwardProxyDestination } from '../../types/destination'
import type { ProxyRuntime } from '../proxy-runtime'
import { ProxyError } from '../diagnostics/proxy-error'
import { errorCode, proxyErrorFromNetworkError } from '../diagnostics/network-error'
import { formatAuthority, formatHostHeader } from '../security/canonical-host'
import type { AbsoluteTarget, AbsoluteTargetProblem } from './absolute-target'
import { decideMaxForwards } from './max-forwards'
import { buildOutgoingRequestHeaders } from './request-headers'
import { receivedHeaderObject } from './received-headers'
import { hookHeaderEdits } from './hook-header-edits'
import { buildClientResponseHeaders } from './response-headers'
import { viaEntry, viaListsPseudonym } from './via'
import { hasBody } from './request-body'
import { withInactivityTimeout } from './inactivity-timeout'
import { transformIncomingResponse, transformOutgoingRequest } from './transforms'
import { countBytesIn, countBytesOut, proxyRequestSpanOf } from '../diagnostics/request-telemetry'
import { injectTraceContext } from './trace-context-headers'
import { countedBody } from './counted-body'
import { ClientDeparture } from './client-departure'

const TARGET_PROBLEMS: Record<AbsoluteTargetProblem, string> = {
  'https-scheme': 'https:// targets must use CONNECT.',
  'unsupported-scheme': 'Only http:// targets can be forwarded.',
  malformed: 'The request target is not a valid absolute http:// URL.'
}

/** Where {@link forwardRequest} sends a request. */
export interface ForwardTarget {
  /** The destination (canonical host and port); `Host` is set from it. */
  readonly destination: ForwardProxyDestination
  /** `http` for absolute-form forwarding; `https` inside intercepted tunnels (validated TLS). */
  readonly scheme: 'http' | 'https'
  /** Path and query sent exactly as received (never normalized). */
  readonly pathAndQuery: string
  /**
   * True for absolute-form requests: TRACE/OPTIONS Max-Forwards is decremented or answered.
   * False inside intercepted tunnels, where Max-Forwards passes untouched.
   */
  readonly applyMaxForwards: boolean
}

/**
 * Forwards an absolute-form `http://` request: see {@link forwardRequest}.
 * Throws ProxyError for a target that cannot be forwarded and anything answered by the proxy.
 */
export async function forwardAbsoluteRequest (
  request: FastifyRequest,
  reply: FastifyReply,
  target: AbsoluteTarget | AbsoluteTargetProblem,
  runtime: ProxyRuntime
): Promise<void> {
  if (typeof target === 'string') {
    throw new ProxyError('http_request_error', TARGET_PROBLEMS[target], { details: target })
  }
  await forwardRequest(request, reply, runtime, {
    destination: target.destination,
    scheme: 'http',
    pathAndQuery: target.pathAndQuery,
    applyMaxForwards: true
  })
}

/**
 * Forwards one request to `target` and streams the response back: loop and policy checks,
 * Max-Forwards when asked, the header rebuild (the application hooks' changes to
 * `request.headers` applied, hop-by-hop, `Connection`-listed names and `Proxy-Authorization`
 * removed, `Host` from the target with the scheme's default port omitted, `Via` added), the transforms' `transformRequest`, the request and its body over
 * undici (validated TLS for `https`), the response head filtered the same way, the transforms'
 * `transformResponse`, then the body with an inactivity timer (tunnelIdleTimeout for
 * `text/event-stream`, httpActivityTimeout otherwise). Requests always leave over HTTP/1.1.
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
  const { pseudonym } = runtime.settings
  if (viaListsPseudonym(request.headers.via, pseudonym)) {
    throw new ProxyError('proxy_loop_detected', 'The request has already passed through this proxy.')
  }
  const { destination, scheme, pathAndQuery } = target
  runtime.policy.checkDestination(destination)

  let maxForwards: string | undefined | 'as-received' = 'as-received'
  if (target.applyMaxForwards) {
    const decision = decideMaxForwards(request.method, headerText(request.headers['max-forwards']))
    if (decision.action === 'refuse-trace') {
      throw new ProxyError('http_request_denied', 'TRACE is not echoed by this proxy.', { status: 405, details: 'Max-Forwards is 0' })
    }
    if (decision.action === 'answer-options') {
      reply.code(200).header('proxy-status', pseudonym).header('content-length', '0').send()
      return
    }
    maxForwards = decision.value
  }

  const raw = request.raw
  const via = viaEntry(raw.httpVersion, pseudonym)
  const defaultPort = scheme === 'https' ? 443 : 80
  const host = formatHostHeader(destination.host, destination.port, defaultPort)
  const received = receivedHeaderObject(raw.rawHeaders, raw.httpVersionMajor)
  const edits = hookHeaderEdits(received, request.headers, { destination, defaultPort })
  let built = buildOutgoingRequestHeaders(raw.rawHeaders, { host, via, maxForwards }, edits)
  const span = runtime.settings.propagateTraceContext ? proxyRequestSpanOf(request) : undefined
  if (span !== undefined) built = injectTraceContext(built, span)

  const departure = new ClientDeparture(reply.raw)
  // A client that left while the app's hooks ran has already had its 'close': dial nothing.
  if (clientGone(reply)) throw clientLeft()
  holdRequestSlot(reply, runtime)

  const headers = await transformOutgoingRequest(runtime.transforms, request, destination, {
    method: request.method, path: pathAndQuery, headers: built, defaultPort
  }, departure)
  if (departure.aborted) throw clientLeft()

  const dispatcher = scheme === 'https' ? runtime.tlsDispatcher : runtime.dispatcher
  const response = await dispatcher.request({
    origin: `${scheme}://${formatAuthority(destination.host, destination.port)}`,
    path: pathAndQuery,
    method: request.method,
    headers,
    body: hasBody(request, received) ? countedBody(raw, (bytes) => countBytesIn(request, bytes), runtime.settings.limits.httpActivityTimeout) : null,
    signal: departure
  }).catch((error: unknown) => { throw fromDispatchError(error) })

  let head
  try {
    head = await transformIncomingResponse(runtime.transforms, request, destination, {
      statusCode: response.statusCode,
      headers: buildClientResponseHeaders(response.headers, via)
    }, departure)
  } catch (error) {
    // Refused: the destination's body is dropped (undici closes that connection). Destroying
    // an unfinished body makes undici emit RequestAbortedError on it: expected here.
    response.body.on('error', () => {})
    response.body.destroy()
    throw error
  }

  const contentType = headerText(response.headers['content-type']) ?? ''
  const idleTimeout = contentType.toLowerCase().startsWith('text/event-stream')
    ? runtime.settings.limits.tunnelIdleTimeout
    : runtime.settings.limits.httpActivityTimeout
  reply.code(head.statusCode).headers(head.headers)
  if (request.method === 'HEAD' || [response.statusCode, head.statusCode].some((status) => status === 204 || status === 304)) {
    response.body.resume()
    reply.send()
    return
  }
  reply.send(withInactivityTimeout(response.body, idleTimeout, (bytes) => countBytesOut(request, bytes)))
}

/**
 * Takes one of the `limits.maxConcurrentRequests` slots until the client's response closes
 * (sent, failed or abandoned: the response emits 'close' in every case, once).
 */
function holdRequestSlot (reply: FastifyReply, runtime: ProxyRuntime): void {
  const release = runtime.forwardedRequests.tryReserve()
  if (release === null) {
    throw new ProxyError('connection_limit_reached', 'The proxy has reached its limit of forwarded requests in flight; try again later.')
  }
  reply.raw.once('close', release)
}

function clientLeft (): ProxyError {
  return new ProxyError('connection_terminated', 'The client went away before the request was forwarded.')
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

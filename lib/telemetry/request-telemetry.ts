// What one proxy request leaves behind: its access log line, its span (started and ended through
// ./traces) and its outcome.

import type { Context, Span } from '@opentelemetry/api'
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify'
import type { ForwardProxyDestination } from '../../types/destination'
import { proxyRequestTargetOf, type ProxyRequestTarget, interceptedTunnelOf, type InterceptedTunnel, type RawRequest } from '../core/proxy-request'
import {
  type TunnelKind,
  countForwardRequest,
  countRequestOutcome
} from './metrics'
import { countErrorOutcome } from './refusal-reasons'
import { ObjectSlot } from '../protocol/object-slot'
import { resetByClient } from '../protocol/cut-response'
import { startProxySpan, endProxySpan, endAbandonedProxySpan, contextWithSpan, tracing } from './traces'
import { type ProxyError } from '../protocol/errors'
import { refusalRuleOf } from '../protocol/refusals'
import type { ReportedRefusal } from '../security/report-mode'
import type { CaptureRecord, FinishedExchange } from '../capture/capture-record'
import type { TrafficCapture } from '../capture/traffic-capture'
import { ABANDONED_STATUS, finishedExchange } from './capture-exchange'
import { proxyRuntimeOf } from '../core/runtime'
import { type AccessLineNotes, decisionOf, logAccess, logsInfo, logUnroutedRefusal, userOf } from './access-line'

/**
 * The outcome count and access line of a request inside an intercepted tunnel that the proxy
 * refused before routing it into Fastify (a `Host` naming another authority, a target that is
 * not origin-form, a CONNECT inside): `refused` with its reason, and a `deny` line naming the
 * tunnel's user, client and destination. It has no span and no capture entry.
 */
export function finishRefusedInTunnel (log: FastifyBaseLogger, req: RawRequest, error: ProxyError): void {
  countErrorOutcome('intercepted', error.status, error)
  if (!logsInfo(log)) return
  const tunnel = interceptedTunnelOf(req)
  logUnroutedRefusal(log, {
    kind: 'intercepted',
    method: req.method ?? '',
    user: tunnel?.grant.user?.name ?? null,
    client: tunnel?.clientAddress ?? null,
    destination: tunnel?.interception.destination,
    error
  }, 'proxy access')
}

/**
 * What the access log and the span of one proxy request collect while it runs (a forwarded
 * request's transport fills its {@link ForwardNotes}; a CONNECT or upgrade sets `dialed` itself).
 */
interface RequestTelemetry extends ForwardNotes, AccessLineNotes {
  readonly kind: 'connect' | 'forward' | 'intercepted'
  readonly span: Span | undefined
  /** Set when a CONNECT is relayed opaquely because its clients refused the proxy's certificate. */
  passthrough: boolean
  /**
   * Set once the request is counted and its access line written, or left to its tunnel's end:
   * a request that ends twice (its client left, then its response failed; an HTTP/2 CONNECT's
   * stream finishing after its tunnel) is logged and counted once.
   */
  finished: boolean
}

const telemetry = new ObjectSlot<RequestTelemetry>('telemetry')

/**
 * Starts the telemetry of a proxy request (the proxy route's first onRequest hook, so it
 * also covers requests refused by authentication): the `forward` count of
 * `forward_proxy.requests` for `http://` forwarding, its span, when a TracerProvider is
 * installed, and what its access log line will need.
 */
export function beginProxyRequest (request: FastifyRequest, capture: TrafficCapture | null): void {
  const target = proxyRequestTargetOf(request.raw)
  if (target === null) return
  if (target.kind === 'forward') countForwardRequest()
  const destination = destinationOf(target)
  const tunnel = target.kind === 'intercepted' ? interceptedTunnelOf(request.raw) : undefined
  // Read only for what will show it (the access line, the span): on a new connection reading it
  // is a system call, which every CONNECT would pay.
  const clientAddress = tunnel !== undefined
    ? tunnel.clientAddress
    : (logsInfo(request.log) || tracing()) ? request.raw.socket?.remoteAddress : undefined
  telemetry.set(request.raw, {
    kind: target.kind,
    destination,
    clientAddress,
    tunnelUser: tunnel === undefined ? undefined : (tunnel.grant.user?.name ?? null),
    span: tracing() ? startRequestSpan(request, target.kind, destination, clientAddress, tunnel) : undefined,
    error: undefined,
    reported: undefined,
    bytesIn: 0,
    bytesOut: 0,
    pooledOn: undefined,
    dialed: undefined,
    secrets: undefined,
    scrubbed: undefined,
    passthrough: false,
    finished: false,
    capture: destination === undefined || capture === null || capture.settings === null ? undefined : capture.begin(destination.host)
  })
}

/** The span of a proxy request, with what its client sent of a trace (tracing is on). */
function startRequestSpan (
  request: FastifyRequest,
  kind: ProxyRequestTarget['kind'],
  destination: ForwardProxyDestination | undefined,
  clientAddress: string | undefined,
  tunnel: InterceptedTunnel | undefined
): Span | undefined {
  const { headers } = request.raw
  return startProxySpan({
    kind,
    method: request.method,
    host: destination?.host ?? '',
    port: destination?.port ?? 0,
    clientAddress,
    traceparent: headers.traceparent,
    tracestate: headers.tracestate,
    fallbackParent: tunnel?.traceContext
  })
}

function destinationOf (target: ProxyRequestTarget): ForwardProxyDestination | undefined {
  if (target.kind === 'forward') return typeof target.target === 'string' ? undefined : target.target.destination
  return target.destination ?? undefined
}

/** The span of a proxy request, if one was started. */
export function proxyRequestSpanOf (request: FastifyRequest): Span | undefined {
  return telemetry.get(request.raw)?.span
}

/** The context that parents the spans of requests inside the tunnel this CONNECT opens. */
export function tunnelTraceContextOf (request: FastifyRequest): Context | undefined {
  return contextWithSpan(telemetry.get(request.raw)?.span)
}

/**
 * Notes the error the proxy answered a request with (the error handler): its `Proxy-Status`
 * error type, and, when it is a refusal, the rule and details the access line explains it with.
 */
export function noteProxyError (request: FastifyRequest, error: ProxyError): void {
  const state = telemetry.get(request.raw)
  if (state !== undefined) state.error = error
}

/**
 * Notes that a host list in report mode would have refused the request (it goes on): its access
 * line says `would-deny`, with the rule and the reason, unless the request is refused after all.
 */
export function noteReportedRefusal (request: FastifyRequest, reported: ReportedRefusal): void {
  const state = telemetry.get(request.raw)
  if (state !== undefined) state.reported = reported
}

/** Notes the connection a CONNECT or an upgrade was dialed on, for the address on its access line. */
export function noteDialed (request: FastifyRequest, socket: object): void {
  const state = telemetry.get(request.raw)
  if (state !== undefined) state.dialed = socket
}

/** Notes that a CONNECT is relayed opaquely because its clients refused the proxy's certificate (its capture entry says `passthrough`). */
export function notePassthrough (request: FastifyRequest): void {
  const state = telemetry.get(request.raw)
  if (state !== undefined) state.passthrough = true
}

/** Notes the secrets a request used or was refused for, named on its access log line. */
export function noteSecrets (request: FastifyRequest, names: readonly string[]): void {
  const state = telemetry.get(request.raw)
  if (state !== undefined) state.secrets = names
}

/**
 * Where the response scrubber of a request adds the names of the secrets it found (named on
 * the access log line as `scrubbed`); a throwaway set for a request without telemetry.
 */
export function scrubbedSecretsOf (request: FastifyRequest): Set<string> {
  const state = telemetry.get(request.raw)
  if (state === undefined) return new Set()
  state.scrubbed ??= new Set()
  return state.scrubbed
}

/** A pooled destination connection as its dispatcher keeps it: the socket it holds now. */
export interface PooledConnection {
  /** The socket of the connection's last dial (undefined before the first). */
  readonly lastDialed: object | undefined
}

/**
 * What a forwarded request's transport tells its access log line: body bytes each way, and the
 * connection it was sent on (so a request on a reused pooled connection still reports the
 * address that connection was dialed to).
 */
export interface ForwardNotes {
  /** Request body bytes read from the client. */
  bytesIn: number
  /** Response body bytes sent toward the client. */
  bytesOut: number
  /**
   * The pooled connection the request was given to, set by the dispatcher (the request is passed
   * these notes as its undici `opaque`).
   */
  pooledOn: PooledConnection | undefined
  /** The socket the response came on: `pooledOn`'s when the response head arrived. */
  dialed: object | undefined
  /** What the traffic capture collects about the request; undefined when it is not recorded. */
  readonly capture?: CaptureRecord | undefined
}

/**
 * The notes a forwarded request's transport fills: looked up once per request, not per chunk.
 * A request without telemetry gets notes of its own that nothing reads.
 */
export function forwardNotesOf (request: FastifyRequest): ForwardNotes {
  return telemetry.get(request.raw) ?? { bytesIn: 0, bytesOut: 0, pooledOn: undefined, dialed: undefined }
}

/**
 * Finishes a proxy request that got a response (the proxy route's onResponse hook; a CONNECT
 * that became a tunnel is finished by {@link finishTunnel} instead; an HTTP/2 stream its client
 * reset, which Node reports as finished, by {@link finishAbandonedRequest}): its count on
 * `forward_proxy.request.outcomes`, one access log line
 * (`access.kind` `forward`, `intercepted`, or `connect` for a refused CONNECT) and the span's end.
 */
export function finishProxyRequest (request: FastifyRequest, reply: FastifyReply): void {
  const state = telemetry.get(request.raw)
  if (state === undefined || state.finished) return
  // A stream the proxy reset itself (a body its destination cut) was answered with an error.
  if (state.error === undefined && resetByClient(reply.raw)) {
    finishAbandonedRequest(request, reply)
    return
  }
  finishAnswered(request, reply, state)
}

/** The count, span end, capture entry and access line of a request answered (or failed) by the proxy. */
function finishAnswered (request: FastifyRequest, reply: FastifyReply, state: RequestTelemetry): void {
  state.finished = true
  // Failed after its dial (no head: a reset, a timeout): the connection it was given to is where it went.
  state.dialed ??= state.pooledOn?.lastDialed
  const status = reply.statusCode
  const errorType = state.error?.errorType
  if (state.error === undefined) countRequestOutcome(state.kind, 'answered')
  else countErrorOutcome(state.kind, status, state.error)
  if (state.span !== undefined) endProxySpan(state.span, { status, errorType })
  if (state.capture !== undefined) finishCapture(request, reply, state, state.capture, undefined)
  if (!logsInfo(request.log)) return
  logAccess(request, reply, state, { kind: state.kind, status, errorType, bytesIn: state.bytesIn, bytesOut: state.bytesOut }, 'proxy access')
}

/**
 * Finishes a request whose client left before its answer was complete: a CONNECT not yet
 * answered (nothing dialed, or the dial in progress abandoned), or a forwarded or intercepted
 * request, for which Fastify runs no onResponse hook. Its count on
 * `forward_proxy.request.outcomes` (`abandoned`), one access log line (the status of the head
 * sent, or 499 as nginx logs a client that closed its request before any; `closeReason`
 * `client-gone`; the bytes moved until then) and the end of its span. Without it a client could
 * reach destinations, or storm the proxy with CONNECTs, and leave no trace in the log. An HTTP/2
 * CONNECT's stream that finishes afterwards as a response does writes no second line. A recorded
 * request gets its capture entry, with `_closeReason` `client-gone`.
 */
export function finishAbandonedRequest (request: FastifyRequest, reply: FastifyReply): void {
  const state = telemetry.get(request.raw)
  if (state === undefined || state.finished) return
  // Not the client: the proxy cut the response for a failure it noted (a body its destination cut).
  if (state.error !== undefined) {
    finishAnswered(request, reply, state)
    return
  }
  state.finished = true
  countRequestOutcome(state.kind, 'abandoned')
  // Left before the head: the connection the request was given to is where it went.
  state.dialed ??= state.pooledOn?.lastDialed
  // The shutdown closes intercepted tunnels, and the requests in flight inside them with them.
  const closeReason = proxyRuntimeOf(request.server.forwardProxy)?.shuttingDown === true ? 'shutdown' : 'client-gone'
  if (state.span !== undefined) endAbandonedProxySpan(state.span, closeReason)
  if (state.capture !== undefined) finishCapture(request, reply, state, state.capture, undefined, closeReason)
  if (!logsInfo(request.log)) return
  const status = reply.raw.headersSent ? reply.statusCode : ABANDONED_STATUS
  logAccess(request, reply, state, { kind: state.kind, status, closeReason, bytesIn: state.bytesIn, bytesOut: state.bytesOut }, 'proxy access')
}

/**
 * Notes that a CONNECT became a tunnel: its line and count are the tunnel's
 * ({@link finishTunnel}), not those of an answered request, even when its HTTP/2 stream
 * finishes as a response does.
 */
export function noteBecameTunnel (request: FastifyRequest): void {
  const state = telemetry.get(request.raw)
  if (state !== undefined) state.finished = true
}

/** How a tunnel ended, for its access log line and span. */
export interface TunnelEnd {
  readonly kind: TunnelKind
  readonly bytesUp: number
  readonly bytesDown: number
  readonly reason: string
  /** Why an intercepted tunnel's client handshake failed (Node's error code), when it did. */
  readonly handshakeError?: string
}

/**
 * Finishes a CONNECT that became a tunnel, when both sides have closed: one access log line
 * (`access.kind` `tunnel`, `access.tunnel` its kind, bytes each way, duration since the
 * CONNECT arrived) and the end of its span.
 */
export function finishTunnel (request: FastifyRequest, reply: FastifyReply, end: TunnelEnd): void {
  const state = telemetry.get(request.raw)
  if (state?.span !== undefined) {
    endProxySpan(state.span, {
      status: 200,
      errorType: undefined,
      attributes: {
        'forward_proxy.tunnel.kind': end.kind,
        'forward_proxy.tunnel.close_reason': end.reason,
        ...(end.handshakeError === undefined ? {} : { 'forward_proxy.tunnel.handshake_error': end.handshakeError }),
        'forward_proxy.tunnel.upload.size': end.bytesUp,
        'forward_proxy.tunnel.download.size': end.bytesDown
      }
    })
  }
  // An intercepted tunnel's requests have entries of their own.
  if (state?.capture !== undefined && end.kind !== 'intercepted') {
    finishCapture(request, reply, state, state.capture, { kind: state.passthrough ? 'passthrough' : 'opaque', bytesUp: end.bytesUp, bytesDown: end.bytesDown, closeReason: end.reason })
  }
  if (!logsInfo(request.log)) return
  logAccess(request, reply, state, { kind: 'tunnel', tunnel: end.kind, status: 200, closeReason: end.reason, handshakeError: end.handshakeError, bytesIn: end.bytesUp, bytesOut: end.bytesDown }, 'tunnel closed')
}

/** How a relayed upgrade ended, for its access log line and span. */
export type UpgradeEnd = Omit<TunnelEnd, 'kind'>

/**
 * Finishes an upgrade request (a WebSocket inside an intercepted tunnel) that was switched and
 * relayed, when both sides have closed. Its reply was hijacked for the relay, so the route's
 * onResponse never runs for it: this gives it its count on `forward_proxy.request.outcomes`
 * (`answered`), one access log line (status 101, bytes each way, `closeReason`, duration since
 * the request arrived) and the end of its span.
 */
export function finishUpgrade (request: FastifyRequest, reply: FastifyReply, end: UpgradeEnd): void {
  const state = telemetry.get(request.raw)
  if (state === undefined) return
  countRequestOutcome(state.kind, 'answered')
  if (state.span !== undefined) {
    endProxySpan(state.span, {
      status: 101,
      errorType: undefined,
      attributes: {
        'forward_proxy.tunnel.close_reason': end.reason,
        'forward_proxy.tunnel.upload.size': end.bytesUp,
        'forward_proxy.tunnel.download.size': end.bytesDown
      }
    })
  }
  if (state.capture !== undefined) {
    finishCapture(request, reply, state, state.capture, { kind: 'websocket', bytesUp: end.bytesUp, bytesDown: end.bytesDown, closeReason: end.reason })
  }
  if (!logsInfo(request.log)) return
  logAccess(request, reply, state, { kind: state.kind, status: 101, closeReason: end.reason, bytesIn: end.bytesUp, bytesOut: end.bytesDown }, 'upgrade closed')
}

/**
 * Hands a recorded request that has ended to its capture (which builds its entry later, off the
 * request path): the response head as written to the client, and what the access line knows.
 */
function finishCapture (
  request: FastifyRequest,
  reply: FastifyReply,
  state: RequestTelemetry,
  record: CaptureRecord,
  relay: FinishedExchange['relay'],
  closeReason?: FinishedExchange['closeReason']
): void {
  const refusedBy = state.error === undefined ? undefined : refusalRuleOf(state.error)
  record.finish(finishedExchange(request, reply, record, {
    user: userOf(request, state),
    intercepted: state.kind === 'intercepted',
    decision: decisionOf(refusedBy, refusedBy === undefined ? state.reported : undefined),
    errorType: state.error?.errorType,
    responseBytes: state.bytesOut,
    dialed: state.dialed,
    closeReason
  }, relay))
}

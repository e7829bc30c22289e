// What one proxy request leaves behind: its access log line, its span (with W3C trace context in
// and out) and its outcome.

import {
  type Context,
  type Span,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Tracer,
  type TracerProvider,
  createTraceState,
  isSpanContextValid,
  type SpanContext
} from '@opentelemetry/api'
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify'
import type { ForwardProxyDestination } from '../../types/destination'
import { proxyRequestTargetOf, type ProxyRequestTarget, interceptedTunnelOf } from '../core/proxy-request'
import {
  type TunnelKind,
  countForwardRequest,
  countRequestOutcome,
  PROXY_METER_NAME,
  PROXY_METER_VERSION
} from './metrics'
import { ObjectSlot } from '../core/object-slot'

/** What the access log and the span of one proxy request collect while it runs. */
interface RequestTelemetry {
  readonly kind: 'connect' | 'forward' | 'intercepted'
  readonly destination: string | undefined
  readonly clientAddress: string | undefined
  /**
   * Inside an intercepted tunnel, the user who opened it, read at arrival: an HTTP/2 request
   * loses the link to its tunnel (its stream's session) once the stream has closed.
   */
  readonly tunnelUser: string | null | undefined
  readonly span: Span | undefined
  errorType: string | undefined
  /** Request body bytes from the client (forwarded requests). */
  bytesIn: number
  /** Response body bytes to the client (forwarded requests). */
  bytesOut: number
  /** Names of the secrets the request used or was refused for (never their values). */
  secrets: readonly string[] | undefined
}

const telemetry = new ObjectSlot<RequestTelemetry>('telemetry')

/**
 * Starts the telemetry of a proxy request (the proxy route's first onRequest hook, so it
 * also covers requests refused by authentication): the `forward` count of
 * `forward_proxy.requests` for `http://` forwarding, its span, when a TracerProvider is
 * installed, and what its access log line will need.
 */
export function beginProxyRequest (request: FastifyRequest): void {
  const target = proxyRequestTargetOf(request.raw)
  if (target === null) return
  if (target.kind === 'forward') countForwardRequest()
  const destination = destinationOf(target)
  const tunnel = target.kind === 'intercepted' ? interceptedTunnelOf(request.raw) : undefined
  const clientAddress = tunnel === undefined ? request.raw.socket?.remoteAddress : tunnel.clientAddress
  const { headers } = request.raw
  const span = startProxySpan({
    kind: target.kind,
    method: request.method,
    host: destination?.host ?? '',
    port: destination?.port ?? 0,
    clientAddress,
    traceparent: headers.traceparent,
    tracestate: headers.tracestate,
    fallbackParent: tunnel?.traceContext
  })
  telemetry.set(request.raw, {
    kind: target.kind,
    destination: destination === undefined ? undefined : `${destination.host}:${destination.port}`,
    clientAddress,
    tunnelUser: tunnel === undefined ? undefined : (tunnel.user?.name ?? null),
    span,
    errorType: undefined,
    bytesIn: 0,
    bytesOut: 0,
    secrets: undefined
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

/** Notes the `Proxy-Status` error type the proxy answered a request with (the error handler). */
export function noteProxyErrorType (request: FastifyRequest, errorType: string): void {
  const state = telemetry.get(request.raw)
  if (state !== undefined) state.errorType = errorType
}

/** Notes the secrets a request used or was refused for, named on its access log line. */
export function noteSecrets (request: FastifyRequest, names: readonly string[]): void {
  const state = telemetry.get(request.raw)
  if (state !== undefined) state.secrets = names
}

/** Adds request body bytes read from the client. */
export function countBytesIn (request: FastifyRequest, bytes: number): void {
  const state = telemetry.get(request.raw)
  if (state !== undefined) state.bytesIn += bytes
}

/** Adds response body bytes sent toward the client. */
export function countBytesOut (request: FastifyRequest, bytes: number): void {
  const state = telemetry.get(request.raw)
  if (state !== undefined) state.bytesOut += bytes
}

/**
 * Finishes a proxy request that got a response (the proxy route's onResponse hook; a CONNECT
 * that became a tunnel is finished by {@link finishTunnel} instead): its count on
 * `forward_proxy.request.outcomes`, one access log line
 * (`access.kind` `forward`, `intercepted`, or `connect` for a refused CONNECT) and the span's end.
 */
export function finishProxyRequest (request: FastifyRequest, reply: FastifyReply): void {
  const state = telemetry.get(request.raw)
  if (state === undefined) return
  const status = reply.statusCode
  countRequestOutcome(state.kind, state.errorType === undefined ? 'answered' : status >= 500 ? 'failed' : 'refused')
  if (state.span !== undefined) endProxySpan(state.span, { status, errorType: state.errorType })
  if (!logsInfo(request.log)) return
  request.log.info({
    access: {
      kind: state.kind,
      user: state.tunnelUser === undefined ? (request.proxyUser?.name ?? null) : state.tunnelUser,
      client: state.clientAddress ?? null,
      method: request.method,
      destination: state.destination ?? null,
      status,
      errorType: state.errorType ?? null,
      bytesIn: state.bytesIn,
      bytesOut: state.bytesOut,
      ...(state.secrets === undefined ? {} : { secrets: state.secrets }),
      durationMs: Math.round(reply.elapsedTime * 1000) / 1000
    }
  }, 'proxy access')
}

/** How a tunnel ended, for its access log line and span. */
export interface TunnelEnd {
  readonly kind: TunnelKind
  readonly bytesUp: number
  readonly bytesDown: number
  readonly reason: string
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
        'forward_proxy.tunnel.upload.size': end.bytesUp,
        'forward_proxy.tunnel.download.size': end.bytesDown
      }
    })
  }
  if (!logsInfo(request.log)) return
  request.log.info({
    access: {
      kind: 'tunnel',
      tunnel: end.kind,
      user: request.proxyUser?.name ?? null,
      client: state?.clientAddress ?? null,
      method: 'CONNECT',
      destination: state?.destination ?? null,
      status: 200,
      errorType: null,
      closeReason: end.reason,
      bytesIn: end.bytesUp,
      bytesOut: end.bytesDown,
      durationMs: Math.round(reply.elapsedTime * 1000) / 1000
    }
  }, 'tunnel closed')
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
  if (!logsInfo(request.log)) return
  request.log.info({
    access: {
      kind: state.kind,
      user: state.tunnelUser === undefined ? (request.proxyUser?.name ?? null) : state.tunnelUser,
      client: state.clientAddress ?? null,
      method: request.method,
      destination: state.destination ?? null,
      status: 101,
      errorType: null,
      closeReason: end.reason,
      bytesIn: end.bytesUp,
      bytesOut: end.bytesDown,
      ...(state.secrets === undefined ? {} : { secrets: state.secrets }),
      durationMs: Math.round(reply.elapsedTime * 1000) / 1000
    }
  }, 'upgrade closed')
}

/**
 * Finishes a CONNECT whose client left before it was answered (nothing dialed, or the dial in
 * progress abandoned): its count on `forward_proxy.request.outcomes` (`abandoned`), one access
 * log line (`access.kind` `connect`, status 499 as nginx logs a client that closed its request,
 * `closeReason` `client-gone`) and the end of its span. Without it a storm of abandoned
 * CONNECTs would leave no trace in the log.
 */
export function finishAbandonedConnect (request: FastifyRequest, reply: FastifyReply): void {
  countRequestOutcome('connect', 'abandoned')
  const state = telemetry.get(request.raw)
  if (state?.span !== undefined) endAbandonedProxySpan(state.span)
  if (!logsInfo(request.log)) return
  request.log.info({
    access: {
      kind: 'connect',
      user: request.proxyUser?.name ?? null,
      client: state?.clientAddress ?? null,
      method: 'CONNECT',
      destination: state?.destination ?? null,
      status: ABANDONED_STATUS,
      errorType: null,
      closeReason: 'client-gone',
      bytesIn: 0,
      bytesOut: 0,
      durationMs: Math.round(reply.elapsedTime * 1000) / 1000
    }
  }, 'proxy access')
}

/** The status logged for a request whose client left before any answer (nginx's convention). */
const ABANDONED_STATUS = 499

/** True when `log` writes info lines: the access log line is not even built otherwise. */
function logsInfo (log: FastifyBaseLogger): boolean {
  const { isLevelEnabled } = log as Partial<{ isLevelEnabled: (level: string) => boolean }>
  return typeof isLevelEnabled === 'function' ? isLevelEnabled.call(log, 'info') : log.level !== 'silent'
}

/**
 * Spans through the OpenTelemetry tracing API: one per CONNECT tunnel and one per forwarded
 * request. Nothing is created until the application installs a TracerProvider (an SDK); the
 * check costs one global lookup and an identity comparison per request.
 * @packageDocumentation
 */

const NOOP_TRACER_PROVIDER: TracerProvider = new ProxyTracerProvider().getDelegate()

let resolvedFor: TracerProvider | undefined
let tracer: Tracer | undefined

/** The proxy's tracer, or undefined while no TracerProvider is installed. */
function proxyTracer (): Tracer | undefined {
  const global = trace.getTracerProvider()
  const delegate = global instanceof ProxyTracerProvider ? global.getDelegate() : global
  if (delegate === NOOP_TRACER_PROVIDER) return undefined
  if (delegate !== resolvedFor || tracer === undefined) {
    tracer = delegate.getTracer(PROXY_METER_NAME, PROXY_METER_VERSION)
    resolvedFor = delegate
  }
  return tracer
}

/** What a proxy span is about. */
export interface ProxySpanStart {
  /** `connect` for a CONNECT (its span lasts as long as the tunnel), otherwise a forwarded request. */
  readonly kind: 'connect' | 'forward' | 'intercepted'
  readonly method: string
  readonly host: string
  readonly port: number
  readonly clientAddress: string | undefined
  /** The client's `traceparent` header, whose trace the span joins when it is valid. */
  readonly traceparent: string | string[] | undefined
  readonly tracestate: string | string[] | undefined
  /** The parent when the client sent no valid `traceparent` (the tunnel's span, for requests inside one). */
  readonly fallbackParent: Context | undefined
}

/**
 * Starts the span of a proxy request, or returns undefined when no TracerProvider is installed.
 * A CONNECT gets a SERVER span named `CONNECT`; a forwarded request a CLIENT span named after
 * its method (its context is what `traceparent` carries to the destination).
 */
export function startProxySpan (start: ProxySpanStart): Span | undefined {
  const tracer = proxyTracer()
  if (tracer === undefined) return undefined
  const remote = parseTraceParent(start.traceparent, start.tracestate)
  const parent = remote === undefined ? (start.fallbackParent ?? ROOT_CONTEXT) : trace.setSpanContext(ROOT_CONTEXT, remote)
  const attributes: Attributes = {
    'http.request.method': start.method,
    'server.address': start.host,
    'server.port': start.port,
    'forward_proxy.kind': start.kind
  }
  if (start.clientAddress !== undefined) attributes['client.address'] = start.clientAddress
  if (start.kind !== 'connect') attributes['url.scheme'] = start.kind === 'forward' ? 'http' : 'https'
  return tracer.startSpan(start.kind === 'connect' ? 'CONNECT' : start.method, {
    kind: start.kind === 'connect' ? SpanKind.SERVER : SpanKind.CLIENT,
    attributes
  }, parent)
}

/** How a proxy span ended. */
export interface ProxySpanEnd {
  readonly status: number
  /** The `Proxy-Status` error type when the proxy answered with an error. */
  readonly errorType: string | undefined
  readonly attributes?: Attributes
}

/**
 * Ends the span of a request whose client left before any answer: no status code (none was
 * sent), `error.type` `client_gone`.
 */
export function endAbandonedProxySpan (span: Span): void {
  span.setAttribute('error.type', 'client_gone')
  span.setStatus({ code: SpanStatusCode.ERROR, message: 'client_gone' })
  span.end()
}

/**
 * Ends a proxy span with the response status and, for a failure, `error.type` and an error
 * status (proxy errors and 5xx answers are errors; a destination's 4xx is not the proxy's).
 */
export function endProxySpan (span: Span, end: ProxySpanEnd): void {
  span.setAttribute('http.response.status_code', end.status)
  if (end.attributes !== undefined) span.setAttributes(end.attributes)
  if (end.errorType !== undefined) {
    span.setAttribute('error.type', end.errorType)
    span.setStatus({ code: SpanStatusCode.ERROR, message: end.errorType })
  } else if (end.status >= 500) {
    span.setAttribute('error.type', String(end.status))
    span.setStatus({ code: SpanStatusCode.ERROR })
  }
  span.end()
}

/** The context whose active span is `span`, to parent the spans of requests inside a tunnel. */
export function contextWithSpan (span: Span | undefined): Context | undefined {
  return span === undefined ? undefined : trace.setSpan(ROOT_CONTEXT, span)
}

// W3C Trace Context level 1: version 00 exactly; later versions may append fields after a dash.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/

/**
 * Parses a W3C `traceparent` header (and `tracestate`) into a remote span context, or returns
 * undefined when it is absent, repeated, malformed or invalid (all-zero ids, version ff), as
 * the recommendation says: a bad header starts a new trace, it never fails the request.
 */
export function parseTraceParent (header: string | string[] | undefined, state: string | string[] | undefined): SpanContext | undefined {
  if (typeof header !== 'string' || header.length > 512) return undefined
  const match = TRACEPARENT.exec(header.trim())
  if (match === null) return undefined
  const [, version, traceId, spanId, flags, rest] = match
  if (version === undefined || traceId === undefined || spanId === undefined || flags === undefined) return undefined
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined
  const context: SpanContext = { traceId, spanId, traceFlags: Number.parseInt(flags, 16) & 1, isRemote: true }
  if (!isSpanContextValid(context)) return undefined
  const stateText = Array.isArray(state) ? state.join(',') : state
  if (stateText !== undefined && stateText.length <= 512) context.traceState = createTraceState(stateText)
  return context
}

/** The `traceparent` value of a span context (version 00). */
export function formatTraceParent (context: SpanContext): string {
  return `00-${context.traceId}-${context.spanId}-${(context.traceFlags & 0xff).toString(16).padStart(2, '0')}`
}

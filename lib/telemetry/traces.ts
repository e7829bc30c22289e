// Spans through the OpenTelemetry tracing API, one per CONNECT tunnel and one per forwarded
// request, and W3C trace context (`traceparent`, `tracestate`) in and out. Nothing is created
// until the application installs a TracerProvider (an SDK); the check costs one global lookup
// and an identity comparison per request.

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
import { PROXY_METER_NAME, PROXY_METER_VERSION } from './metrics'

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

/** True while a TracerProvider is installed: proxy requests get spans. */
export function tracing (): boolean {
  return proxyTracer() !== undefined
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
 * sent), `error.type` `client_gone` (or `shutdown`, when the server's shutdown cut it).
 */
export function endAbandonedProxySpan (span: Span, closeReason: 'client-gone' | 'shutdown' = 'client-gone'): void {
  const errorType = closeReason === 'shutdown' ? 'shutdown' : 'client_gone'
  span.setAttribute('error.type', errorType)
  span.setStatus({ code: SpanStatusCode.ERROR, message: errorType })
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
function parseTraceParent (header: string | string[] | undefined, state: string | string[] | undefined): SpanContext | undefined {
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

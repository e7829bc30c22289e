import { createTraceState, isSpanContextValid, type SpanContext } from '@opentelemetry/api'

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

import { isSpanContextValid, type Span } from '@opentelemetry/api'
import { formatTraceParent } from '../diagnostics/trace-context'

/**
 * Replaces `traceparent` and `tracestate` in an outgoing header list (flat name/value pairs)
 * with the context of `span`, so the destination's spans join the proxy's trace as children
 * of the forwarded request's span. A span with no valid context leaves the list untouched.
 */
export function injectTraceContext (headers: string[], span: Span): string[] {
  const context = span.spanContext()
  if (!isSpanContextValid(context)) return headers
  const result: string[] = []
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] ?? ''
    const lower = name.toLowerCase()
    if (lower === 'traceparent' || lower === 'tracestate') continue
    result.push(name, headers[i + 1] ?? '')
  }
  result.push('traceparent', formatTraceParent(context))
  const state = context.traceState?.serialize()
  if (state !== undefined && state !== '') result.push('tracestate', state)
  return result
}

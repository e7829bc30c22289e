import type { Attributes } from '@opentelemetry/api'
import { proxyInstruments } from './proxy-instruments'

/**
 * The proxy's request counters through the OpenTelemetry metrics API.
 *
 * Everything here is a no-op until the application installs a MeterProvider
 * (`metrics.setGlobalMeterProvider(...)`, or an OpenTelemetry SDK that does it). The counter
 * is resolved against the global provider at each count, not once at import:
 * `metrics.getMeter()` returns a meter of the provider installed at that moment (a no-op meter
 * when there is none) and, unlike the tracing API, does not follow a provider installed later.
 * So an application that installs its SDK after importing or registering the plugin is counted
 * from the first request after the install. The counter is cached per provider, so a count
 * costs one global lookup and an identity comparison; requests served before any provider
 * existed are not counted retroactively.
 * @packageDocumentation
 */

export { PROXY_METER_NAME, PROXY_METER_VERSION } from './proxy-meter'

/** The counter of proxy requests on arrival: one instrument, told apart by its attributes. */
export const PROXY_REQUESTS_COUNTER = 'forward_proxy.requests'

/** The attribute naming the kind of request counted: `connect`, `forward` or `intercepted`. */
export const PROXY_KIND_ATTRIBUTE = 'forward_proxy.kind'

/** The attribute naming what became of a request: `intercepted` on `forward_proxy.requests`, any {@link ProxyRequestOutcome} on `forward_proxy.request.outcomes`. */
export const PROXY_OUTCOME_ATTRIBUTE = 'forward_proxy.outcome'

/** The counter of every proxy request's and tunnel's end, by kind and outcome. */
export const PROXY_OUTCOMES_COUNTER = 'forward_proxy.request.outcomes'

/** The kinds of proxy request: a CONNECT, absolute-form `http://` forwarding, or a request inside an intercepted tunnel. */
export type ProxyRequestKind = 'connect' | 'forward' | 'intercepted'

/**
 * What became of a proxy request: `tunnel` (a CONNECT opened an opaque tunnel), `intercepted`
 * (a CONNECT opened an intercepted tunnel), `answered` (a response that is not the proxy's own
 * error: the destination's, or one an application hook sent), `refused` (the proxy answered
 * with a 4xx error: authentication, policy, a bad request) or `failed` (the proxy answered with
 * a 5xx error: the destination could not be reached or answered badly, a limit, a loop).
 */
export type ProxyRequestOutcome = 'tunnel' | 'intercepted' | 'abandoned' | 'answered' | 'refused' | 'failed'

const CONNECT_ATTRIBUTES: Attributes = Object.freeze({ [PROXY_KIND_ATTRIBUTE]: 'connect' })
const INTERCEPTED_TUNNEL_ATTRIBUTES: Attributes = Object.freeze({ [PROXY_OUTCOME_ATTRIBUTE]: 'intercepted' })
const INTERCEPTED_REQUEST_ATTRIBUTES: Attributes = Object.freeze({ [PROXY_KIND_ATTRIBUTE]: 'intercepted' })
const FORWARD_REQUEST_ATTRIBUTES: Attributes = Object.freeze({ [PROXY_KIND_ATTRIBUTE]: 'forward' })

const OUTCOMES: readonly ProxyRequestOutcome[] = ['tunnel', 'intercepted', 'abandoned', 'answered', 'refused', 'failed']

// Built once, so a count is one add with no allocation on the request path.
const OUTCOME_ATTRIBUTES: Readonly<Record<ProxyRequestKind, Readonly<Record<ProxyRequestOutcome, Attributes>>>> = Object.freeze({
  connect: outcomeAttributes('connect'),
  forward: outcomeAttributes('forward'),
  intercepted: outcomeAttributes('intercepted')
})

function outcomeAttributes (kind: ProxyRequestKind): Readonly<Record<ProxyRequestOutcome, Attributes>> {
  const table: Partial<Record<ProxyRequestOutcome, Attributes>> = {}
  for (const outcome of OUTCOMES) table[outcome] = Object.freeze({ [PROXY_KIND_ATTRIBUTE]: kind, [PROXY_OUTCOME_ATTRIBUTE]: outcome })
  return Object.freeze(table as Record<ProxyRequestOutcome, Attributes>)
}

/**
 * Counts a CONNECT tunnel request that reached the proxy: `forward_proxy.requests` +1 with
 * `forward_proxy.kind=connect`. Called once per CONNECT, over HTTP/1.1 or HTTP/2,
 * when it arrives, whatever its answer (a tunnel, 403, 407, 501 or a failed dial); extended
 * CONNECT (`:protocol`) is not a tunnel request and is not counted.
 */
export function countConnectRequest (): void {
  proxyInstruments().requests.add(1, CONNECT_ATTRIBUTES)
}

/**
 * Counts an absolute-form `http://` request that reached the proxy: `forward_proxy.requests`
 * +1 with `forward_proxy.kind=forward`. Called once per request when it arrives (before
 * authentication), whatever its answer.
 */
export function countForwardRequest (): void {
  proxyInstruments().requests.add(1, FORWARD_REQUEST_ATTRIBUTES)
}

/**
 * Counts how a proxy request or tunnel ended: `forward_proxy.request.outcomes` +1 with its
 * `forward_proxy.kind` and `forward_proxy.outcome`. Called once per request: when a CONNECT
 * becomes a tunnel, or when any other proxy request's response has been sent.
 */
export function countRequestOutcome (kind: ProxyRequestKind, outcome: ProxyRequestOutcome): void {
  proxyInstruments().requestOutcomes.add(1, OUTCOME_ATTRIBUTES[kind][outcome])
}

/**
 * Counts a CONNECT that became an intercepted tunnel: `forward_proxy.requests` +1 with
 * `forward_proxy.outcome=intercepted`. Called once per tunnel, when the selector has
 * chosen interception and the tunnel is handed to the in-memory TLS endpoint. That CONNECT was
 * already counted by {@link countConnectRequest}.
 */
export function countInterceptedTunnel (): void {
  proxyInstruments().requests.add(1, INTERCEPTED_TUNNEL_ATTRIBUTES)
}

/**
 * Counts one request inside an intercepted tunnel: `forward_proxy.requests` +1 with
 * `forward_proxy.kind=intercepted`. Called once per request the in-memory endpoint
 * receives, whatever its answer (421, 400, a forwarded response or an error).
 */
export function countInterceptedRequest (): void {
  proxyInstruments().requests.add(1, INTERCEPTED_REQUEST_ATTRIBUTES)
}

import type { Attributes } from '@opentelemetry/api'
import { proxyInstruments } from './proxy-instruments'

/**
 * The proxy's diagnostic counters (SPEC 6) through the OpenTelemetry metrics API.
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

/** The counter of SPEC 6: one instrument, told apart by its attributes. */
export const PROXY_REQUESTS_COUNTER = 'forward_proxy.requests'

/** The attribute naming the kind of request counted: `connect` or `intercepted`. */
export const PROXY_KIND_ATTRIBUTE = 'forward_proxy.kind'

/** The attribute naming what became of a CONNECT: `intercepted`. */
export const PROXY_OUTCOME_ATTRIBUTE = 'forward_proxy.outcome'

const CONNECT_ATTRIBUTES: Attributes = Object.freeze({ [PROXY_KIND_ATTRIBUTE]: 'connect' })
const INTERCEPTED_TUNNEL_ATTRIBUTES: Attributes = Object.freeze({ [PROXY_OUTCOME_ATTRIBUTE]: 'intercepted' })
const INTERCEPTED_REQUEST_ATTRIBUTES: Attributes = Object.freeze({ [PROXY_KIND_ATTRIBUTE]: 'intercepted' })

/**
 * Counts a CONNECT tunnel request that reached the proxy: `forward_proxy.requests` +1 with
 * `forward_proxy.kind=connect` (SPEC 6). Called once per CONNECT, over HTTP/1.1 or HTTP/2,
 * when it arrives, whatever its answer (a tunnel, 403, 407, 501 or a failed dial); extended
 * CONNECT (`:protocol`) is not a tunnel request and is not counted.
 */
export function countConnectRequest (): void {
  proxyInstruments().requests.add(1, CONNECT_ATTRIBUTES)
}

/**
 * Counts a CONNECT that became an intercepted tunnel: `forward_proxy.requests` +1 with
 * `forward_proxy.outcome=intercepted` (SPEC 6). Called once per tunnel, when the selector has
 * chosen interception and the tunnel is handed to the in-memory TLS endpoint. That CONNECT was
 * already counted by {@link countConnectRequest}.
 */
export function countInterceptedTunnel (): void {
  proxyInstruments().requests.add(1, INTERCEPTED_TUNNEL_ATTRIBUTES)
}

/**
 * Counts one request inside an intercepted tunnel: `forward_proxy.requests` +1 with
 * `forward_proxy.kind=intercepted` (SPEC 6). Called once per request the in-memory endpoint
 * receives, whatever its answer (421, 400, a forwarded response or an error).
 */
export function countInterceptedRequest (): void {
  proxyInstruments().requests.add(1, INTERCEPTED_REQUEST_ATTRIBUTES)
}

// The proxy's OpenTelemetry metrics: the instruments on one meter, and what each part of the proxy
// records on them (interception's handshakes and certificates: tls-metrics.ts).

import {
  type Attributes,
  createNoopMeter,
  metrics,
  type Counter,
  type Histogram,
  type Meter,
  type MeterProvider,
  type UpDownCounter
} from '@opentelemetry/api'
import { isProxyError, type ProxyError, type ProxyErrorType } from '../protocol/errors'
import { AUTH_LOCKOUT_DETAILS, policyRefusalReasonOf, type PolicyRefusalReason } from '../protocol/refusals'

/*
 * Everything here is a no-op until the application installs a MeterProvider
 * (`metrics.setGlobalMeterProvider(...)`, or an OpenTelemetry SDK that does it). The instruments
 * are resolved against the global provider at each recording, not once at import:
 * `metrics.getMeter()` returns a meter of the provider installed at that moment (a no-op meter
 * when there is none) and, unlike the tracing API, does not follow a provider installed later.
 * So an application that installs its SDK after importing or registering the plugin is counted
 * from the first request after the install. The instruments are cached per provider, so a
 * recording costs one global lookup and an identity comparison; requests served before any
 * provider existed are not counted retroactively.
 */

/** The attribute naming the kind of request counted: `connect`, `forward` or `intercepted`. */
export const PROXY_KIND_ATTRIBUTE = 'forward_proxy.kind'

/**
 * The attribute naming what became of a request: `intercepted` on `forward_proxy.requests`, any
 * {@link ProxyRequestOutcome} on `forward_proxy.request.outcomes`.
 */
export const PROXY_OUTCOME_ATTRIBUTE = 'forward_proxy.outcome'

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

/** Every instrument the proxy records on, created on one meter of one MeterProvider. */
export interface ProxyInstruments {
  /** False while the global provider is the API's no-op one: callers skip building attributes. */
  readonly enabled: boolean
  readonly requests: Counter
  readonly requestOutcomes: Counter
  readonly activeTunnels: UpDownCounter
  readonly tunnelDuration: Histogram
  readonly tunnelUpload: Histogram
  readonly tunnelDownload: Histogram
  readonly handshakeDuration: Histogram
  readonly handshakeFailures: Counter
  readonly certificatesIssued: Counter
  readonly certificateIssueDuration: Histogram
  readonly certificateCacheLookups: Counter
  readonly connectFailures: Counter
  readonly policyRefusals: Counter
  readonly authFailures: Counter
  readonly limitStoreTransitions: Counter
  readonly clientRefusalPassthroughs: Counter
  readonly captureEntries: Counter
  readonly captureDropped: Counter
}

/** Bucket boundaries (seconds) for durations from a millisecond to an hour. */
const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600]
/** Bucket boundaries (bytes) from 1 KiB to 1 GiB. */
const SIZE_BUCKETS = [1024, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864, 268435456, 1073741824]

const NOOP_METER_CLASS = createNoopMeter().constructor

let resolvedFor: MeterProvider | undefined
let current: ProxyInstruments | undefined

/**
 * The proxy's instruments on the global MeterProvider installed now (see the note at the top of this file for
 * why they are looked up at each recording, not once at import). Cached per provider: a
 * recording costs one global lookup and an identity comparison.
 */
export function proxyInstruments (): ProxyInstruments {
  const provider = metrics.getMeterProvider()
  if (provider !== resolvedFor || current === undefined) {
    current = createInstruments(provider.getMeter(PROXY_METER_NAME, PROXY_METER_VERSION))
    resolvedFor = provider
  }
  return current
}

function createInstruments (meter: Meter): ProxyInstruments {
  const histogram = (name: string, unit: 's' | 'By', description: string): Histogram =>
    meter.createHistogram(name, { description, unit, advice: { explicitBucketBoundaries: unit === 's' ? DURATION_BUCKETS : SIZE_BUCKETS } })
  const counter = (name: string, unit: string, description: string): Counter => meter.createCounter(name, { description, unit })
  return {
    enabled: meter.constructor !== NOOP_METER_CLASS,
    requests: counter('forward_proxy.requests', '{request}', 'Requests that reached the forward proxy, by kind (connect, forward, intercepted) or outcome (intercepted).'),
    requestOutcomes: counter('forward_proxy.request.outcomes', '{request}', 'Proxy requests and tunnels by kind (connect, forward, intercepted) and what became of them (tunnel, intercepted, abandoned, answered, refused, failed).'),
    activeTunnels: meter.createUpDownCounter('forward_proxy.tunnel.active', {
      description: 'CONNECT tunnels open now (answered 200 and not yet closed), by kind.',
      unit: '{tunnel}'
    }),
    tunnelDuration: histogram('forward_proxy.tunnel.duration', 's', 'How long CONNECT tunnels stayed open, from the 200 to the close of both sides.'),
    tunnelUpload: histogram('forward_proxy.tunnel.upload.size', 'By', 'Bytes a tunnel carried from the client toward the destination (TLS records for intercepted tunnels).'),
    tunnelDownload: histogram('forward_proxy.tunnel.download.size', 'By', 'Bytes a tunnel carried from the destination toward the client (TLS records for intercepted tunnels).'),
    handshakeDuration: histogram('forward_proxy.tls.handshake.duration', 's', 'Client TLS handshakes on intercepted tunnels that completed: certificate lookup plus handshake.'),
    handshakeFailures: counter('forward_proxy.tls.handshake.failures', '{handshake}', 'Client TLS handshakes on intercepted tunnels that did not complete, by error type.'),
    certificatesIssued: counter('forward_proxy.certificate.issued', '{certificate}', 'Leaf certificates minted (or enrolled over EST) by the bundled certificate providers.'),
    certificateIssueDuration: histogram('forward_proxy.certificate.issue.duration', 's', 'Time to mint (or enroll) one leaf certificate, successful or not.'),
    certificateCacheLookups: counter('forward_proxy.certificate.cache.lookups', '{lookup}', 'Leaf certificate cache lookups of the bundled providers, by result (hit, miss).'),
    connectFailures: counter('forward_proxy.destination.connect.failures', '{failure}', 'Connections to destinations that failed (DNS, TCP or TLS), by Proxy-Status error type.'),
    policyRefusals: counter('forward_proxy.policy.refusals', '{request}', 'Requests and tunnels refused by the destination policy or a destination filter, by reason.'),
    authFailures: counter('forward_proxy.auth.failures', '{request}', 'Proxy requests answered 407: missing, malformed or rejected Proxy-Authorization.'),
    limitStoreTransitions: counter('forward_proxy.limit_store.transitions', '{transition}', 'Times the store of shared limits (redis) became unreachable (state lost) or answered again (state back).'),
    clientRefusalPassthroughs: counter(
      'forward_proxy.interception.passthroughs',
      '{passthrough}',
      'Times a user\'s tunnels to a host started to be relayed opaquely because its clients refused the proxy\'s certificate (passthroughOnClientRefusal).'
    ),
    captureEntries: counter('forward_proxy.capture.entries', '{entry}', 'HAR entries the traffic capture recorded (capture option).'),
    captureDropped: counter('forward_proxy.capture.dropped', '{entry}', 'HAR entries the traffic capture lost, by where: file (its write queue was full), feed (a captures() consumer was behind), pending (requests ended faster than entries were built).')
  }
}

/** The meter's name (the instrumentation scope): the package name. */
export const PROXY_METER_NAME = 'fastify-forward-proxy'

/** The meter's version (the instrumentation scope version): the package version. */
export const PROXY_METER_VERSION: string = packageVersion()

/**
 * The package version, read through the package's own name (its `exports` lists
 * `./package.json`), so it resolves the same from the TypeScript sources and from `dist/`.
 */
function packageVersion (): string {
  const manifest = require('fastify-forward-proxy/package.json') as { version?: unknown }
  return typeof manifest.version === 'string' ? manifest.version : '0.0.0'
}

/** The attribute naming why the policy refused, on `forward_proxy.policy.refusals`. */
const REFUSAL_REASON_ATTRIBUTE = 'forward_proxy.policy.reason'

/** The attribute naming why authentication failed, on `forward_proxy.auth.failures`. */
const AUTH_FAILURE_REASON_ATTRIBUTE = 'forward_proxy.auth.reason'

/**
 * Error types that mean the proxy could not connect to the destination (DNS, TCP or TLS).
 * `connection_terminated` is left out: it also stands for a client that left while connecting.
 */
const CONNECT_FAILURES: ReadonlySet<ProxyErrorType> = new Set<ProxyErrorType>([
  'dns_error', 'dns_timeout', 'destination_unavailable',
  'connection_refused', 'connection_timeout', 'tls_protocol_error', 'tls_certificate_error'
])

const attributeCache = new Map<string, Attributes>()

/** Frozen attributes for one key/value, made once: the values come from small closed sets. */
function attributesOf (key: string, value: string): Attributes {
  const id = `${key}=${value}`
  let attributes = attributeCache.get(id)
  if (attributes === undefined) {
    attributes = Object.freeze({ [key]: value })
    attributeCache.set(id, attributes)
  }
  return attributes
}

/**
 * Counts a failure the proxy answered: an authentication failure (407, or 429 from the
 * brute-force guard), a policy refusal by
 * reason, or a failed connection to the destination by `Proxy-Status` error type. `original`
 * is what was thrown, before it became `error` (an authentication failure from
 * @fastify/basic-auth is not a ProxyError).
 */
export function recordProxyFailure (error: ProxyError, original: unknown): void {
  const instruments = proxyInstruments()
  if (error.status === 407) {
    instruments.authFailures.add(1, attributesOf(AUTH_FAILURE_REASON_ATTRIBUTE, isProxyError(original) ? 'invalid_credentials' : 'missing_or_malformed'))
    return
  }
  // The brute-force guard's answer (auth.failureLimit); a user's own limits answer 429 too.
  if (error.status === 429 && error.details === AUTH_LOCKOUT_DETAILS) {
    instruments.authFailures.add(1, attributesOf(AUTH_FAILURE_REASON_ATTRIBUTE, 'rate_limited'))
    return
  }
  const reason: PolicyRefusalReason | undefined = policyRefusalReasonOf(error)
  if (reason !== undefined) {
    instruments.policyRefusals.add(1, attributesOf(REFUSAL_REASON_ATTRIBUTE, reason))
    return
  }
  if (CONNECT_FAILURES.has(error.errorType)) instruments.connectFailures.add(1, attributesOf('error.type', error.errorType))
}

/**
 * What kind of tunnel a CONNECT opened: relayed opaquely over an HTTP/1.1 connection
 * (`opaque`) or an HTTP/2 stream (`http2`), or intercepted (`intercepted`, over either).
 */
export type TunnelKind = 'opaque' | 'http2' | 'intercepted'

/** The attribute naming a tunnel's kind on the tunnel instruments. */
const TUNNEL_KIND_ATTRIBUTE = 'forward_proxy.tunnel.kind'

/** The attribute naming why a tunnel ended, on its duration. */
const TUNNEL_CLOSE_REASON_ATTRIBUTE = 'forward_proxy.tunnel.close_reason'

/** How a tunnel ended, as reported by its relay. */
export interface TunnelOutcome {
  readonly bytesUp: number
  readonly bytesDown: number
  readonly reason: string
}

const KIND_ATTRIBUTES: Readonly<Record<string, Attributes>> = Object.freeze({
  'opaque/1.1': attributes('opaque', '1.1'),
  'http2/2': attributes('http2', '2'),
  'intercepted/1.1': attributes('intercepted', '1.1'),
  'intercepted/2': attributes('intercepted', '2')
})

function attributes (kind: TunnelKind, version: '1.1' | '2'): Attributes {
  return Object.freeze({ [TUNNEL_KIND_ATTRIBUTE]: kind, 'network.protocol.version': version })
}

/**
 * Records one tunnel on the tunnel instruments: `forward_proxy.tunnel.active` +1 now, and when
 * the returned function is called (once, at close) -1 plus its duration and the bytes it
 * carried each way. `http2` says whether the CONNECT came on an HTTP/2 stream.
 */
export function recordTunnelOpen (kind: TunnelKind, http2: boolean): (outcome: TunnelOutcome) => void {
  const openedOn = proxyInstruments()
  // Recorded nowhere (no MeterProvider): nothing to keep for the close either, which then
  // records nothing even if a provider was installed meanwhile (its gauge never saw the +1).
  if (!openedOn.enabled) return ignoreTunnelOutcome
  const base = KIND_ATTRIBUTES[`${kind}/${http2 ? '2' : '1.1'}`] ?? attributes(kind, http2 ? '2' : '1.1')
  const opened = performance.now()
  openedOn.activeTunnels.add(1, base)
  let closed = false
  return (outcome) => {
    if (closed) return
    closed = true
    const instruments = proxyInstruments()
    instruments.activeTunnels.add(-1, base)
    if (!instruments.enabled) return
    instruments.tunnelDuration.record((performance.now() - opened) / 1000, { ...base, [TUNNEL_CLOSE_REASON_ATTRIBUTE]: outcome.reason })
    instruments.tunnelUpload.record(outcome.bytesUp, base)
    instruments.tunnelDownload.record(outcome.bytesDown, base)
  }
}

function ignoreTunnelOutcome (): void {}

/** The attribute of `forward_proxy.limit_store.transitions`: `lost` or `back`. */
const LIMIT_STORE_STATE_ATTRIBUTE = 'forward_proxy.limit_store.state'

const STORE_LOST: Attributes = Object.freeze({ [LIMIT_STORE_STATE_ATTRIBUTE]: 'lost' })
const STORE_BACK: Attributes = Object.freeze({ [LIMIT_STORE_STATE_ATTRIBUTE]: 'back' })

/** Counts the store of shared limits becoming unreachable (`lost`) or answering again (`back`). */
export function recordLimitStoreTransition (state: 'lost' | 'back'): void {
  proxyInstruments().limitStoreTransitions.add(1, state === 'lost' ? STORE_LOST : STORE_BACK)
}

/** Counts a passthrough that refusals of the proxy's certificate started (`passthroughOnClientRefusal`). */
export function recordClientRefusalPassthrough (): void {
  proxyInstruments().clientRefusalPassthroughs.add(1)
}

const CAPTURE_DROP_ATTRIBUTES: Readonly<Record<'file' | 'feed' | 'pending', Attributes>> = Object.freeze({
  file: Object.freeze({ 'forward_proxy.capture.where': 'file' }),
  feed: Object.freeze({ 'forward_proxy.capture.where': 'feed' }),
  pending: Object.freeze({ 'forward_proxy.capture.where': 'pending' })
})

/** Counts an entry the traffic capture recorded. */
export function recordCaptureEntry (): void {
  proxyInstruments().captureEntries.add(1)
}

/** Counts entries the traffic capture lost, by where (see `forward_proxy.capture.dropped`). */
export function recordCaptureDropped (where: 'file' | 'feed' | 'pending', count: number): void {
  proxyInstruments().captureDropped.add(count, CAPTURE_DROP_ATTRIBUTES[where])
}

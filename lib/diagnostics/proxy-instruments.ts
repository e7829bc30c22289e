import { createNoopMeter, metrics, type Counter, type Histogram, type Meter, type MeterProvider, type UpDownCounter } from '@opentelemetry/api'
import { PROXY_METER_NAME, PROXY_METER_VERSION } from './proxy-meter'

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
}

/** Bucket boundaries (seconds) for durations from a millisecond to an hour. */
const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600]
/** Bucket boundaries (bytes) from 1 KiB to 1 GiB. */
const SIZE_BUCKETS = [1024, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864, 268435456, 1073741824]

const NOOP_METER_CLASS = createNoopMeter().constructor

let resolvedFor: MeterProvider | undefined
let current: ProxyInstruments | undefined

/**
 * The proxy's instruments on the global MeterProvider installed now (see proxy-metrics.ts for
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
    authFailures: counter('forward_proxy.auth.failures', '{request}', 'Proxy requests answered 407: missing, malformed or rejected Proxy-Authorization.')
  }
}

// The bundled server's metrics endpoint: the OpenTelemetry reader collected on scrape, in
// Prometheus text.

import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { metrics } from '@opentelemetry/api'
import { createError } from '@fastify/error'
import {
  MeterProvider,
  MetricReader,
  DataPointType,
  type MetricData,
  type ResourceMetrics,
  type ScopeMetrics
} from '@opentelemetry/sdk-metrics'
import type { MetricsListenerConfig } from './config'
import { isWorker } from './workers'
import { joinClusterMetrics, workersText, type ClusterMetricsWorker } from './cluster-metrics'

/** A reader that collects only when scraped: no timer, no push. */
class ScrapeReader extends MetricReader {
  protected override async onShutdown (): Promise<void> {}
  protected override async onForceFlush (): Promise<void> {}
}

/** The running metrics endpoint. */
export interface MetricsEndpoint {
  /** `http://host:port/metrics` with the port actually bound. */
  readonly url: string
  /** The listener, which the proxy must never dial. */
  readonly server: Server
  /** Stops the listener and removes the MeterProvider it installed. */
  close (): Promise<void>
}

/** The bin's metrics endpoint cannot start: the process has a global MeterProvider already. */
const MeterProviderInUseError = createError('FFP_ERR_METRICS_PROVIDER_IN_USE', 'metrics: another OpenTelemetry MeterProvider is already installed', 500)

/**
 * Installs an OpenTelemetry MeterProvider as the global one and serves its metrics in the
 * Prometheus text format at `GET /metrics` on a listener of its own: never a proxy listener,
 * so no proxy client reaches it and it needs no proxy authentication. Anything else gets 404
 * (405 for another method on `/metrics`). In a worker of a `workers` server the workers share
 * the listener, and a scrape answers the sum over every worker (see cluster-metrics.ts), with
 * `forward_proxy_metrics_workers` and `forward_proxy_metrics_workers_reporting`.
 * @throws when the port cannot be bound, or another MeterProvider is already installed.
 */
export async function startMetricsEndpoint (config: MetricsListenerConfig): Promise<MetricsEndpoint> {
  const reader = new ScrapeReader()
  const provider = new MeterProvider({ readers: [reader] })
  if (!metrics.setGlobalMeterProvider(provider)) {
    await provider.shutdown()
    throw new MeterProviderInUseError()
  }
  const collectHere = async (): Promise<ScopeMetrics[]> => (await reader.collect()).resourceMetrics.scopeMetrics
  const workers = isWorker() ? joinClusterMetrics(collectHere) : undefined
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0]
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found: metrics are at /metrics\n')
      return
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('Method not allowed\n')
      return
    }
    const failed = (): void => {
      res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('Metric collection failed\n')
    }
    scrape(collectHere, workers).then((body) => {
      if (body === null) {
        failed()
        return
      }
      res.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE, 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' })
      res.end(req.method === 'HEAD' ? undefined : body)
    }, failed)
  })
  server.requestTimeout = 10_000
  server.headersTimeout = 5_000
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(config.port, config.host, () => { server.removeListener('error', reject); resolve() })
    })
  } catch (error) {
    workers?.close()
    metrics.disable()
    await provider.shutdown()
    throw error
  }
  workers?.announce()
  const address = server.address() as AddressInfo
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return {
    url: `http://${host}:${address.port}/metrics`,
    server,
    async close () {
      workers?.close()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      metrics.disable()
      await provider.shutdown()
    }
  }
}

/** The body of a scrape: this process's metrics, or with `workers` the sum over every worker (null when no worker answered). */
async function scrape (collectHere: () => Promise<ScopeMetrics[]>, workers: ClusterMetricsWorker | undefined): Promise<string | null> {
  if (workers === undefined) return toPrometheusText({ scopeMetrics: await collectHere() })
  const collection = await workers.collect()
  if (collection.reporting === 0) return null
  return toPrometheusText(collection) + workersText(collection)
}

/** The content type of the Prometheus text exposition format this module writes. */
const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

const UNIT_SUFFIXES: Readonly<Record<string, string>> = { s: 'seconds', ms: 'milliseconds', By: 'bytes' }

/**
 * The Prometheus name of an OpenTelemetry instrument, as the OpenTelemetry-to-Prometheus
 * compatibility rules make it: invalid characters become `_`, the unit becomes a suffix
 * (`s` -> `_seconds`, `By` -> `_bytes`; annotations such as `{request}` are dropped), and
 * monotonic sums end in `_total`.
 */
function prometheusName (metric: MetricData): string {
  let name = sanitize(metric.descriptor.name)
  const suffix = UNIT_SUFFIXES[metric.descriptor.unit]
  if (suffix !== undefined && !name.endsWith(`_${suffix}`)) name += `_${suffix}`
  if (metric.dataPointType === DataPointType.SUM && metric.isMonotonic) name += '_total'
  return name
}

/**
 * Writes collected metrics in the Prometheus text exposition format (version 0.0.4): counters
 * (monotonic sums), gauges (up-down counters and gauges) and histograms with cumulative
 * `_bucket{le=...}`, `_sum` and `_count`. Exponential histograms are not exported.
 */
export function toPrometheusText (resourceMetrics: Pick<ResourceMetrics, 'scopeMetrics'>): string {
  const lines: string[] = []
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) writeMetric(lines, metric)
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`
}

function writeMetric (lines: string[], metric: MetricData): void {
  const name = prometheusName(metric)
  const help = `# HELP ${name} ${escapeHelp(metric.descriptor.description)}`
  switch (metric.dataPointType) {
    case DataPointType.SUM:
    case DataPointType.GAUGE: {
      const type = metric.dataPointType === DataPointType.SUM && metric.isMonotonic ? 'counter' : 'gauge'
      lines.push(help, `# TYPE ${name} ${type}`)
      for (const point of metric.dataPoints) lines.push(`${name}${labels(point.attributes)} ${formatNumber(point.value)}`)
      return
    }
    case DataPointType.HISTOGRAM: {
      lines.push(help, `# TYPE ${name} histogram`)
      for (const point of metric.dataPoints) {
        const { buckets, count, sum } = point.value
        let cumulative = 0
        buckets.boundaries.forEach((boundary, index) => {
          cumulative += buckets.counts[index] ?? 0
          lines.push(`${name}_bucket${labels(point.attributes, ['le', formatNumber(boundary)])} ${cumulative}`)
        })
        lines.push(`${name}_bucket${labels(point.attributes, ['le', '+Inf'])} ${count}`)
        lines.push(`${name}_sum${labels(point.attributes)} ${formatNumber(sum ?? 0)}`)
        lines.push(`${name}_count${labels(point.attributes)} ${count}`)
      }
      break
    }
    default:
      // Exponential histograms: none of the proxy's instruments records one.
  }
}

function labels (attributes: Readonly<Record<string, unknown>>, extra?: readonly [string, string]): string {
  const parts: string[] = []
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined) continue
    parts.push(`${sanitize(key)}="${escapeLabel(String(value))}"`)
  }
  if (extra !== undefined) parts.push(`${extra[0]}="${extra[1]}"`)
  return parts.length === 0 ? '' : `{${parts.join(',')}}`
}

function sanitize (name: string): string {
  const cleaned = name.replace(/[^a-zA-Z0-9_:]/g, '_')
  return /^[0-9]/.test(cleaned) ? `_${cleaned}` : cleaned
}

function escapeLabel (value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')
}

function escapeHelp (value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')
}

function formatNumber (value: number): string {
  if (value === Number.POSITIVE_INFINITY) return '+Inf'
  if (value === Number.NEGATIVE_INFINITY) return '-Inf'
  return String(value)
}

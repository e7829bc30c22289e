import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { metrics } from '@opentelemetry/api'
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { PROMETHEUS_CONTENT_TYPE, toPrometheusText } from './prometheus-text'
import type { MetricsListenerConfig } from './metrics-listener'

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

/**
 * Installs an OpenTelemetry MeterProvider as the global one and serves its metrics in the
 * Prometheus text format at `GET /metrics` on a listener of its own: never a proxy listener,
 * so no proxy client reaches it and it needs no proxy authentication. Anything else gets 404
 * (405 for another method on `/metrics`).
 * @throws when the port cannot be bound, or another MeterProvider is already installed.
 */
export async function startMetricsEndpoint (config: MetricsListenerConfig): Promise<MetricsEndpoint> {
  const reader = new ScrapeReader()
  const provider = new MeterProvider({ readers: [reader] })
  if (!metrics.setGlobalMeterProvider(provider)) {
    await provider.shutdown()
    throw new Error('metrics: another OpenTelemetry MeterProvider is already installed')
  }
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
    reader.collect().then(({ resourceMetrics }) => {
      const body = toPrometheusText(resourceMetrics)
      res.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE, 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' })
      res.end(req.method === 'HEAD' ? undefined : body)
    }, () => {
      res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('Metric collection failed\n')
    })
  })
  server.requestTimeout = 10_000
  server.headersTimeout = 5_000
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(config.port, config.host, () => { server.removeListener('error', reject); resolve() })
    })
  } catch (error) {
    metrics.disable()
    await provider.shutdown()
    throw error
  }
  const address = server.address() as AddressInfo
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return {
    url: `http://${host}:${address.port}/metrics`,
    server,
    async close () {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      metrics.disable()
      await provider.shutdown()
    }
  }
}

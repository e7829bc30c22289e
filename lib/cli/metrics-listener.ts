/** The `metrics` key of the configuration file, defaults applied. */
export interface MetricsListenerConfig {
  host: string
  port: number
}

/** Defaults of the `metrics` key: loopback only, Prometheus' registered exporter port. */
export const DEFAULT_METRICS_LISTENER: MetricsListenerConfig = { host: '127.0.0.1', port: 9464 }

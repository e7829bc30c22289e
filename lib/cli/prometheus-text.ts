import { DataPointType, type MetricData, type ResourceMetrics } from '@opentelemetry/sdk-metrics'

/** The content type of the Prometheus text exposition format this module writes. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

const UNIT_SUFFIXES: Readonly<Record<string, string>> = { s: 'seconds', ms: 'milliseconds', By: 'bytes' }

/**
 * The Prometheus name of an OpenTelemetry instrument, as the OpenTelemetry-to-Prometheus
 * compatibility rules make it: invalid characters become `_`, the unit becomes a suffix
 * (`s` -> `_seconds`, `By` -> `_bytes`; annotations such as `{request}` are dropped), and
 * monotonic sums end in `_total`.
 */
export function prometheusName (metric: MetricData): string {
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
export function toPrometheusText (resourceMetrics: ResourceMetrics): string {
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
      return
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

import { metrics } from '@opentelemetry/api'
import { DataPointType, MeterProvider, MetricReader, type MetricData } from '@opentelemetry/sdk-metrics'
import type { Test } from 'tap'

/** A metric reader that only collects on demand (no timer, no exporter). */
class OnDemandMetricReader extends MetricReader {
  protected override async onShutdown (): Promise<void> {}
  protected override async onForceFlush (): Promise<void> {}
}

/** One data point of a sum: its value and exact attributes. */
export interface SumPoint {
  value: number
  attributes: Record<string, unknown>
}

/** What one collection saw of an instrument. */
export interface CollectedMetric {
  /** The meter (instrumentation scope) that created it. */
  scope: { name: string, version: string | undefined }
  descriptor: MetricData['descriptor']
  isMonotonic: boolean | undefined
  points: SumPoint[]
}

/** One data point of a histogram: how many values, their sum, and its exact attributes. */
export interface HistogramPoint {
  count: number
  sum: number
  min: number | undefined
  max: number | undefined
  attributes: Record<string, unknown>
}

/** What one collection saw of a histogram. */
export interface CollectedHistogram {
  descriptor: MetricData['descriptor']
  points: HistogramPoint[]
}

/** An in-memory metrics SDK installed as the global MeterProvider. */
export interface InstalledMetrics {
  /** Collects now and returns the named instrument, or undefined when nothing was recorded on it. */
  collect (name: string): Promise<CollectedMetric | undefined>
  /** Collects now and returns the named histogram, or undefined when nothing was recorded on it. */
  collectHistogram (name: string): Promise<CollectedHistogram | undefined>
  /** Collects now and returns the points of the named sum as `{ "<attributes JSON>": value }`. */
  sums (name: string): Promise<Record<string, number>>
  /** Collects now and returns everything recorded (names, attributes, values) as one JSON text. */
  dump (): Promise<string>
  /** Removes the global provider and shuts this SDK down (also done at teardown). */
  uninstall (): Promise<void>
}

/**
 * Installs a fresh MeterProvider with an on-demand reader as the OpenTelemetry global (the way
 * an application installs its SDK), removed again at teardown. Sums are cumulative.
 */
export function installMetrics (t: Test): InstalledMetrics {
  const reader = new OnDemandMetricReader()
  const provider = new MeterProvider({ readers: [reader] })
  if (!metrics.setGlobalMeterProvider(provider)) throw new Error('a global MeterProvider is already installed')
  let installed = true
  const uninstall = async (): Promise<void> => {
    if (!installed) return
    installed = false
    metrics.disable()
    await provider.shutdown()
  }
  t.teardown(uninstall)
  const find = async (name: string): Promise<{ metric: MetricData, scope: { name: string, version: string | undefined } } | undefined> => {
    const { resourceMetrics, errors } = await reader.collect()
    if (errors.length > 0) throw new AggregateError(errors, 'metric collection failed')
    for (const scopeMetrics of resourceMetrics.scopeMetrics) {
      for (const metric of scopeMetrics.metrics) {
        if (metric.descriptor.name === name) return { metric, scope: { name: scopeMetrics.scope.name, version: scopeMetrics.scope.version } }
      }
    }
    return undefined
  }
  const installedMetrics: InstalledMetrics = {
    uninstall,
    async dump () {
      const { resourceMetrics, errors } = await reader.collect()
      if (errors.length > 0) throw new AggregateError(errors, 'metric collection failed')
      return JSON.stringify(resourceMetrics.scopeMetrics)
    },
    async collectHistogram (name) {
      const found = await find(name)
      if (found === undefined) return undefined
      const { metric } = found
      if (metric.dataPointType !== DataPointType.HISTOGRAM) throw new Error(`${name} is not a histogram`)
      return {
        descriptor: metric.descriptor,
        points: metric.dataPoints.map((point) => ({
          count: point.value.count,
          sum: point.value.sum ?? 0,
          min: point.value.min,
          max: point.value.max,
          attributes: { ...point.attributes }
        }))
      }
    },
    async sums (name) {
      const metric = await installedMetrics.collect(name)
      const result: Record<string, number> = {}
      for (const point of metric?.points ?? []) result[JSON.stringify(sortedAttributes(point.attributes))] = point.value
      return result
    },
    async collect (name) {
      const { resourceMetrics, errors } = await reader.collect()
      if (errors.length > 0) throw new AggregateError(errors, 'metric collection failed')
      for (const scopeMetrics of resourceMetrics.scopeMetrics) {
        for (const metric of scopeMetrics.metrics) {
          if (metric.descriptor.name !== name) continue
          if (metric.dataPointType !== DataPointType.SUM) throw new Error(`${name} is not a sum`)
          return {
            scope: { name: scopeMetrics.scope.name, version: scopeMetrics.scope.version },
            descriptor: metric.descriptor,
            isMonotonic: metric.isMonotonic,
            points: metric.dataPoints.map((point) => ({ value: point.value, attributes: { ...point.attributes } }))
          }
        }
      }
      return undefined
    }
  }
  return installedMetrics
}

/** The attributes with their keys sorted, so their JSON is a stable key. */
export function sortedAttributes (attributes: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(attributes).sort(([a], [b]) => a.localeCompare(b)))
}

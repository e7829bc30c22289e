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

/** An in-memory metrics SDK installed as the global MeterProvider. */
export interface InstalledMetrics {
  /** Collects now and returns the named instrument, or undefined when nothing was recorded on it. */
  collect (name: string): Promise<CollectedMetric | undefined>
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
  return {
    uninstall,
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
}

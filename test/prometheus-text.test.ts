import { test } from 'tap'
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { toPrometheusText } from './helpers/internals'

class OnDemandReader extends MetricReader {
  protected override async onShutdown (): Promise<void> {}
  protected override async onForceFlush (): Promise<void> {}
}

test('Prometheus text: names get unit suffixes and _total, label values are escaped, histogram buckets are cumulative', async (t) => {
  const reader = new OnDemandReader()
  const provider = new MeterProvider({ readers: [reader] })
  t.teardown(() => provider.shutdown())
  const meter = provider.getMeter('test')
  meter.createCounter('demo.requests', { unit: '{request}', description: 'Demo\nrequests' }).add(2, { 'a.b': 'x"y\\z\nw' })
  meter.createUpDownCounter('demo.open', { unit: '{tunnel}' }).add(-1)
  const histogram = meter.createHistogram('demo.size', { unit: 'By', advice: { explicitBucketBoundaries: [10, 100] } })
  for (const value of [5, 50, 500]) histogram.record(value)
  const { resourceMetrics } = await reader.collect()
  const text = toPrometheusText(resourceMetrics)
  t.match(text, '# HELP demo_requests_total Demo\\nrequests\n# TYPE demo_requests_total counter\ndemo_requests_total{a_b="x\\"y\\\\z\\nw"} 2\n')
  t.match(text, '# TYPE demo_open gauge\ndemo_open -1\n')
  t.match(text, [
    '# TYPE demo_size_bytes histogram',
    'demo_size_bytes_bucket{le="10"} 1',
    'demo_size_bytes_bucket{le="100"} 2',
    'demo_size_bytes_bucket{le="+Inf"} 3',
    'demo_size_bytes_sum 555',
    'demo_size_bytes_count 3'
  ].join('\n'))
})

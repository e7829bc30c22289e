import { test } from 'tap'
import { countConnectRequest, countInterceptedRequest, countInterceptedTunnel } from './helpers/internals'
import { installMetrics } from './helpers/metric-reader'

test('without a MeterProvider the counters are no-ops', async (t) => {
  t.doesNotThrow(() => { countConnectRequest(); countInterceptedTunnel(); countInterceptedRequest() })
  const installed = installMetrics(t)
  t.equal(await installed.collect('forward_proxy.requests'), undefined, 'nothing recorded before the provider was installed')
})

test('the three counts are one instrument, forward_proxy.requests, with exactly one attribute each', async (t) => {
  const installed = installMetrics(t)
  countConnectRequest()
  countConnectRequest()
  countInterceptedTunnel()
  countInterceptedRequest()
  countInterceptedRequest()
  countInterceptedRequest()
  const metric = await installed.collect('forward_proxy.requests')
  if (metric === undefined) throw new Error('forward_proxy.requests was not recorded')
  t.equal(metric.isMonotonic, true)
  const byAttributes = (a: { attributes: Record<string, unknown> }, b: { attributes: Record<string, unknown> }): number =>
    JSON.stringify(a.attributes).localeCompare(JSON.stringify(b.attributes))
  t.strictSame([...metric.points].sort(byAttributes), [
    { value: 2, attributes: { 'forward_proxy.kind': 'connect' } },
    { value: 3, attributes: { 'forward_proxy.kind': 'intercepted' } },
    { value: 1, attributes: { 'forward_proxy.outcome': 'intercepted' } }
  ])
})

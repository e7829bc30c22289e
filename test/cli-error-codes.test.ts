import { test } from 'tap'
import { metrics } from '@opentelemetry/api'
import { MeterProvider } from '@opentelemetry/sdk-metrics'
import { startConfiguredServer } from './helpers/cli-server'
import { parseConfig, startProxyServer } from './helpers/internals'

test('server: a configuration error carries FFP_ERR_INVALID_CONFIG, from the file and from the start alike', async (t) => {
  t.throws(() => parseConfig({ listen: [{ host: '127.0.0.1', port: 'eighty' }] }, 'test.json', '/'), { name: 'ConfigError', code: 'FFP_ERR_INVALID_CONFIG' })
  await t.rejects(startProxyServer({ ...parseConfig({ listen: [{ host: '127.0.0.1', port: 0 }] }, 'test.json', '/'), listen: [] }), { name: 'ConfigError', code: 'FFP_ERR_INVALID_CONFIG', message: 'at least one listener is required' })
})

test('server: "metrics" in a process that has a MeterProvider already: FFP_ERR_METRICS_PROVIDER_IN_USE', async (t) => {
  const provider = new MeterProvider()
  t.ok(metrics.setGlobalMeterProvider(provider))
  t.teardown(async () => {
    metrics.disable()
    await provider.shutdown()
  })
  await t.rejects(startConfiguredServer(t, { listen: [{ host: '127.0.0.1', port: 0 }], metrics: { port: 0 } }), { name: 'FastifyError', code: 'FFP_ERR_METRICS_PROVIDER_IN_USE' })
})

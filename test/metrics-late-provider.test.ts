import { test } from 'tap'
import { installMetrics } from './helpers/metric-reader'
import { startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { startTcpDestination } from './helpers/tcp-destination'

const ONE_CONNECT = [{ value: 1, attributes: { 'forward_proxy.kind': 'connect' } }]

test('no-op without a MeterProvider; an SDK installed after the plugin is registered and listening counts from then on', async (t) => {
  // The plugin is imported (by the helpers), registered and listening before any provider exists
  // (installMetrics throws if one was already installed).
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t)

  const before = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  before.socket.destroy()
  t.equal(before.status, 200, 'the proxy works without any SDK')

  const installed = installMetrics(t)
  t.equal(await installed.collect('forward_proxy.requests'), undefined, 'the CONNECT before the install is not counted retroactively')
  const after = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  after.socket.destroy()
  t.equal(after.status, 200)
  t.strictSame((await installed.collect('forward_proxy.requests'))?.points, ONE_CONNECT, 'the CONNECT after the install is counted')

  // Replacing the global provider (metrics.disable, then a new SDK) moves the counting to the new one.
  await installed.uninstall()
  const replacement = installMetrics(t)
  const third = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  third.socket.destroy()
  t.equal(third.status, 200)
  t.strictSame((await replacement.collect('forward_proxy.requests'))?.points, ONE_CONNECT, 'the new provider counts the next CONNECT')
})

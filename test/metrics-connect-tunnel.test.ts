import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'tap'
import { PROXY_METER_VERSION } from './helpers/internals'
import { installMetrics } from './helpers/metric-reader'
import { startOrigin, startProxy } from './helpers/servers'
import { openTunnel, rawExchange } from './helpers/raw-client'
import { startTcpDestination } from './helpers/tcp-destination'

test('an opened opaque CONNECT tunnel counts forward_proxy.requests once with exactly forward_proxy.kind=connect', async (t) => {
  const installed = installMetrics(t)
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t)
  t.equal(await installed.collect('forward_proxy.requests'), undefined, 'nothing counted before any request')

  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  t.teardown(() => tunnel.socket.destroy())
  t.equal(tunnel.status, 200)
  const upstream = await destination.nextConnection()
  tunnel.socket.write('ping')
  const echoed = await new Promise<string>((resolve) => upstream.once('data', (chunk: Buffer) => resolve(chunk.toString())))
  t.equal(echoed, 'ping', 'the tunnel relays bytes')

  const metric = await installed.collect('forward_proxy.requests')
  if (metric === undefined) throw new Error('forward_proxy.requests was not recorded')
  t.same(metric.scope, { name: 'fastify-forward-proxy', version: PROXY_METER_VERSION })
  const manifest = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }
  t.equal(PROXY_METER_VERSION, manifest.version, 'the meter version is the package version')
  t.equal(metric.descriptor.name, 'forward_proxy.requests')
  t.equal(metric.descriptor.unit, '{request}')
  t.equal(metric.isMonotonic, true, 'a counter (monotonic sum)')
  t.strictSame(metric.points, [{ value: 1, attributes: { 'forward_proxy.kind': 'connect' } }])
})

test('each CONNECT counts once; the app\'s own requests are not counted and http:// forwarding counts as forward, not connect', async (t) => {
  const installed = installMetrics(t)
  const origin = await startOrigin(t)
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t, {}, (app) => { app.get('/own', async () => ({ own: true })) })

  const first = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  const second = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  t.teardown(() => { first.socket.destroy(); second.socket.destroy() })
  t.equal(first.status, 200)
  t.equal(second.status, 200)
  const own = await rawExchange(proxy.port, 'GET /own HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
  t.equal(own.status, 200)
  const forwarded = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nConnection: close\r\n\r\n`)
  t.equal(forwarded.status, 200)

  t.strictSame(await installed.sums('forward_proxy.requests'), {
    '{"forward_proxy.kind":"connect"}': 2,
    '{"forward_proxy.kind":"forward"}': 1
  }, 'the app\'s own request is not counted; http:// forwarding counts as forward')
})

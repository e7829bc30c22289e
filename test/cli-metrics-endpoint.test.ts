import { test } from 'tap'
import { request } from 'undici'
import { LOOPBACK_ORIGINS, portOf, startConfiguredServer } from './helpers/cli-server'
import { startOrigin } from './helpers/servers'
import { openTunnel, rawExchange } from './helpers/raw-client'
import { once, startTcpDestination } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'
import { parseConfig } from './helpers/internals'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('server: "metrics" serves the proxy\'s instruments in the Prometheus text format at GET /metrics on a separate listener (counters _total, units as suffixes, histograms with buckets)', async (t) => {
  const origin = await startOrigin(t)
  const destination = await startTcpDestination(t)
  const server = await startConfiguredServer(t, {
    listen: [{ host: '127.0.0.1', port: 0 }],
    users: { alice: 's3cret' },
    destinations: LOOPBACK_ORIGINS,
    metrics: { port: 0 }
  })
  t.match(server.metricsUrl, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/, 'loopback by default')
  const proxyPort = portOf(server.urls[0])
  t.not(portOf(server.metricsUrl), proxyPort)

  const auth = `Basic ${Buffer.from('alice:s3cret').toString('base64')}`
  const tunnel = await openTunnel(proxyPort, `127.0.0.1:${destination.port}`, { 'Proxy-Authorization': auth })
  t.equal(tunnel.status, 200)
  const upstream = await destination.nextConnection()
  upstream.end('bye')
  tunnel.socket.end()
  await once(tunnel.socket, 'close')
  const denied = await rawExchange(proxyPort, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`)
  t.equal(denied.status, 407)
  await eventually(() => server.app.forwardProxy.activeTunnels === 0)

  const scrape = await request(server.metricsUrl ?? '')
  t.equal(scrape.statusCode, 200)
  t.match(scrape.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  const text = await scrape.body.text()
  t.match(text, /# TYPE forward_proxy_requests_total counter\n/)
  t.match(text, /\nforward_proxy_requests_total\{forward_proxy_kind="connect"\} 1\n/)
  t.match(text, /\nforward_proxy_auth_failures_total\{forward_proxy_auth_reason="missing_or_malformed"\} 1\n/)
  t.match(text, /# TYPE forward_proxy_tunnel_active gauge\nforward_proxy_tunnel_active\{forward_proxy_tunnel_kind="opaque",network_protocol_version="1\.1"\} 0\n/)
  t.match(text, /# TYPE forward_proxy_tunnel_duration_seconds histogram\n/)
  t.match(text, /\nforward_proxy_tunnel_download_size_bytes_bucket\{forward_proxy_tunnel_kind="opaque",network_protocol_version="1\.1",le="1024"\} 1\n/)
  t.match(text, /\nforward_proxy_tunnel_download_size_bytes_bucket\{forward_proxy_tunnel_kind="opaque",network_protocol_version="1\.1",le="\+Inf"\} 1\n/)
  t.match(text, /\nforward_proxy_tunnel_download_size_bytes_sum\{forward_proxy_tunnel_kind="opaque",network_protocol_version="1\.1"\} 3\n/)
  t.match(text, /\nforward_proxy_tunnel_download_size_bytes_count\{forward_proxy_tunnel_kind="opaque",network_protocol_version="1\.1"\} 1\n/)

  const elsewhere = await request(new URL('/healthz', server.metricsUrl).href)
  t.equal(elsewhere.statusCode, 404, 'only /metrics is served there')
  await elsewhere.body.dump()
  const post = await request(server.metricsUrl ?? '', { method: 'POST' })
  t.equal(post.statusCode, 405)
  await post.body.dump()
  const proxied = await rawExchange(portOf(server.metricsUrl), `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`)
  t.equal(proxied.status, 404, 'the metrics listener is not a proxy')
  await expectNothingDialedBefore(t, origin.accepts, 'nothing was forwarded')
  const notTunnel = await rawExchange(portOf(server.metricsUrl), `CONNECT 127.0.0.1:${origin.port} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`)
  t.not(notTunnel.status, 200, 'nor a tunnel endpoint')

  const metricsUrl = server.metricsUrl ?? ''
  await server.close()
  await t.rejects(request(metricsUrl), 'the endpoint stops with the server')
})

test('server: without "metrics" there is no endpoint; "metrics" defaults to 127.0.0.1:9464 and refuses unknown keys', async (t) => {
  const server = await startConfiguredServer(t, { listen: [{ host: '127.0.0.1', port: 0 }] })
  t.equal(server.metricsUrl, undefined)
  t.same(parseConfig({ metrics: {} }, 'test.json', '/').metrics, { host: '127.0.0.1', port: 9464 })
  t.throws(() => parseConfig({ metrics: { path: '/x' } }, 'test.json', '/'), /metrics/)
})

import { test } from 'tap'
import { ProxyAgent, request } from 'undici'
import { installMetrics } from './helpers/metric-reader'
import { startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { once, readAll, startTcpDestination } from './helpers/tcp-destination'
import { startHttp2TunnelRig } from './helpers/http2-proxy'
import { eventually } from './helpers/eventually'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin } from './helpers/intercepting-proxy'
import { createCaCertificateProvider } from '../lib/index'

test('Metrics: an opaque HTTP/1.1 tunnel is forward_proxy.tunnel.active 1 while open and 0 after; its duration and the bytes each way are recorded once at close', async (t) => {
  const installed = installMetrics(t)
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t)
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  t.equal(tunnel.status, 200)
  const upstream = await destination.nextConnection()
  t.same(await installed.sums('forward_proxy.tunnel.active'), { '{"forward_proxy.tunnel.kind":"opaque","network.protocol.version":"1.1"}': 1 })

  tunnel.socket.write('hello')
  upstream.once('data', () => upstream.end('world!!'))
  t.equal(await readAll(tunnel.socket), 'world!!')
  tunnel.socket.end()
  await once(tunnel.socket, 'close')
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)

  const base = { 'forward_proxy.tunnel.kind': 'opaque', 'network.protocol.version': '1.1' }
  t.same(await installed.sums('forward_proxy.tunnel.active'), { [JSON.stringify(base)]: 0 }, 'back to 0 after the close')
  const duration = await installed.collectHistogram('forward_proxy.tunnel.duration')
  t.equal(duration?.descriptor.unit, 's')
  t.same(duration?.points.map((point) => [point.count, point.attributes]), [[1, { ...base, 'forward_proxy.tunnel.close_reason': 'closed' }]])
  t.ok((duration?.points[0]?.sum ?? -1) >= 0)
  const upload = await installed.collectHistogram('forward_proxy.tunnel.upload.size')
  const download = await installed.collectHistogram('forward_proxy.tunnel.download.size')
  t.equal(upload?.descriptor.unit, 'By')
  t.same(upload?.points.map((point) => [point.count, point.sum, point.attributes]), [[1, 5, base]], '5 bytes client to destination')
  t.same(download?.points.map((point) => [point.count, point.sum, point.attributes]), [[1, 7, base]], '7 bytes destination to client')
})

test('Metrics: an HTTP/2 CONNECT tunnel is kind http2 on forward_proxy.tunnel.active and its histograms', async (t) => {
  const installed = installMetrics(t)
  const { proxy, open } = await startHttp2TunnelRig(t)
  const { tunnel, upstream } = await open()
  const key = JSON.stringify({ 'forward_proxy.tunnel.kind': 'http2', 'network.protocol.version': '2' })
  t.same(await installed.sums('forward_proxy.tunnel.active'), { [key]: 1 })
  tunnel.stream.write('abc')
  upstream.once('data', () => upstream.end('xy'))
  t.equal(await tunnel.body(), 'xy')
  tunnel.stream.end()
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  t.same(await installed.sums('forward_proxy.tunnel.active'), { [key]: 0 })
  const upload = await installed.collectHistogram('forward_proxy.tunnel.upload.size')
  t.same(upload?.points.map((point) => [point.count, point.sum]), [[1, 3]])
  const download = await installed.collectHistogram('forward_proxy.tunnel.download.size')
  t.same(download?.points.map((point) => [point.count, point.sum]), [[1, 2]])
})

test('Metrics: intercepted tunnels record kind intercepted, a TLS handshake duration per tunnel, one certificate minted (with its duration) and the cache lookups (miss, then hit)', async (t) => {
  const installed = installMetrics(t)
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const provider = createCaCertificateProvider({ cert: pki.operatorCa.cert, key: pki.operatorCa.key })
  const proxy = await startInterceptingProxy(t, pki, {
    interception: { certificateProvider: provider, selector: { shouldIntercept: () => true } }
  })
  for (const path of ['/one', '/two']) {
    // A new agent each time: a new tunnel, a new client handshake.
    const agent = new ProxyAgent({ uri: proxy.url, requestTls: { ca: pki.operatorCa.cert } })
    const response = await request(`https://127.0.0.1:${origin.port}${path}`, { dispatcher: agent })
    t.equal(response.statusCode, 200)
    await response.body.dump()
    await agent.close()
  }
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)

  const key = JSON.stringify({ 'forward_proxy.tunnel.kind': 'intercepted', 'network.protocol.version': '1.1' })
  t.same(await installed.sums('forward_proxy.tunnel.active'), { [key]: 0 })
  const duration = await installed.collectHistogram('forward_proxy.tunnel.duration')
  t.same(duration?.points.map((point) => point.count), [2], 'two intercepted tunnels closed')
  const upload = await installed.collectHistogram('forward_proxy.tunnel.upload.size')
  t.ok((upload?.points[0]?.sum ?? 0) > 0, 'TLS records from the client were counted')

  const handshakes = await installed.collectHistogram('forward_proxy.tls.handshake.duration')
  t.equal(handshakes?.descriptor.unit, 's')
  t.same(handshakes?.points.map((point) => [point.count, point.attributes]), [[2, { 'tls.protocol.version': '1.3' }]])
  t.equal(await installed.collect('forward_proxy.tls.handshake.failures'), undefined, 'no handshake failed')

  t.same(await installed.sums('forward_proxy.certificate.issued'), { '{}': 1 }, 'one leaf minted for the host')
  const issue = await installed.collectHistogram('forward_proxy.certificate.issue.duration')
  t.same(issue?.points.map((point) => [point.count, point.attributes]), [[1, {}]])
  t.same(await installed.sums('forward_proxy.certificate.cache.lookups'), {
    '{"forward_proxy.certificate.cache.result":"hit"}': 1,
    '{"forward_proxy.certificate.cache.result":"miss"}': 1
  })
})

test('Metrics: forward_proxy.tls.handshake.failures counts certificate_unavailable (the provider returned null) and tls_error (the client spoke something other than TLS)', async (t) => {
  const installed = installMetrics(t)
  const pki = await makeInterceptionPki(t)
  let answer: 'none' | 'leaf' = 'none'
  const proxy = await startInterceptingProxy(t, pki, {
    interception: {
      certificateProvider: { getCertificate: () => answer === 'none' ? null : { cert: pki.interceptionLeaf.cert, key: pki.interceptionLeaf.key } },
      selector: { shouldIntercept: () => true }
    }
  })
  const refused = await openTunnel(proxy.port, '127.0.0.1:443')
  t.equal(refused.status, 200)
  refused.socket.write(Buffer.from('16030100', 'hex'))
  refused.socket.resume()
  await once(refused.socket, 'close')

  answer = 'leaf'
  const garbage = await openTunnel(proxy.port, '127.0.0.1:443')
  t.equal(garbage.status, 200)
  garbage.socket.end('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
  garbage.socket.resume()
  await once(garbage.socket, 'close')
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)

  t.same(await installed.sums('forward_proxy.tls.handshake.failures'), {
    '{"error.type":"certificate_unavailable"}': 1,
    '{"error.type":"tls_error"}': 1
  })
  t.equal(await installed.collectHistogram('forward_proxy.tls.handshake.duration'), undefined, 'no handshake completed')
})

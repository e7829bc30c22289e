import { test } from 'tap'
import { installMetrics } from './helpers/metric-reader'
import { connectHttp2, openHttp2Tunnel, startHttp2Proxy } from './helpers/http2-proxy'
import { startTcpDestination } from './helpers/tcp-destination'

test('an HTTP/2 CONNECT stream, opened and refused by policy, each count with forward_proxy.kind=connect', async (t) => {
  const installed = installMetrics(t)
  const destination = await startTcpDestination(t)
  const proxy = await startHttp2Proxy(t, { destinations: { allowPrivateNetworks: true, allowedPorts: [destination.port] } })
  const session = await connectHttp2(t, proxy)

  const opened = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`)
  t.equal(opened.status, 200)
  t.strictSame((await installed.collect('forward_proxy.requests'))?.points, [{ value: 1, attributes: { 'forward_proxy.kind': 'connect' } }])

  const refused = await openHttp2Tunnel(session, `127.0.0.1:${destination.port + 1 === 65536 ? 1 : destination.port + 1}`)
  t.equal(refused.status, 403)
  await refused.body()
  opened.stream.destroy()
  t.strictSame((await installed.collect('forward_proxy.requests'))?.points, [{ value: 2, attributes: { 'forward_proxy.kind': 'connect' } }])
})

import { test } from 'tap'
import { once } from 'node:events'
import { connectHttp2, openHttp2Tunnel, startHttp2Proxy } from './helpers/http2-proxy'
import { startSentinel } from './helpers/servers'
import { readAll, startTcpDestination } from './helpers/tcp-destination'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('policy over HTTP/2: a denied host gets 403 http_request_denied; the session stays usable', async (t) => {
  const sentinel = await startSentinel(t)
  const destination = await startTcpDestination(t)
  const proxy = await startHttp2Proxy(t, { destinations: { allowPrivateNetworks: true, allowedPorts: '*', deniedHosts: ['denied.test'] } })
  const session = await connectHttp2(t, proxy)

  const denied = await openHttp2Tunnel(session, `denied.test:${sentinel.port}`)
  t.equal(denied.status, 403)
  t.match(denied.headers['proxy-status'], /^fastify-forward-proxy; error=http_request_denied/)
  await denied.body()
  await expectNothingDialedBefore(t, sentinel.accepts, 'the denied host was never dialed')

  const allowed = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`)
  t.equal(allowed.status, 200, 'the next stream on the same session opens a tunnel')
  const upstream = await destination.nextConnection()
  const arrived = readAll(upstream)
  allowed.stream.end('after the 403')
  t.equal(await arrived, 'after the 403')
  upstream.end()
  await once(allowed.stream, 'close')
})

test('over HTTP/2: a loopback destination under the default strict policy gets 403 destination_ip_prohibited; the session stays usable', async (t) => {
  const sentinel = await startSentinel(t)
  // The default policy (ports 80 and 443, no special-purpose addresses), except for the sentinel's port.
  const proxy = await startHttp2Proxy(t, { destinations: { allowedPorts: [sentinel.port] } })
  const session = await connectHttp2(t, proxy)

  for (const host of ['127.0.0.1', 'localhost', '[::1]']) {
    const refused = await openHttp2Tunnel(session, `${host}:${sentinel.port}`)
    t.equal(refused.status, 403, host)
    t.match(refused.headers['proxy-status'], /^fastify-forward-proxy; error=destination_ip_prohibited/, host)
    await refused.body()
  }
  const port = await openHttp2Tunnel(session, '127.0.0.1:22')
  t.equal(port.status, 403, 'a port outside allowedPorts')
  t.match(port.headers['proxy-status'], /error=http_request_denied/)
  await port.body()
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing dialed')
  t.notOk(session.closed || session.destroyed, 'the session is still open')
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

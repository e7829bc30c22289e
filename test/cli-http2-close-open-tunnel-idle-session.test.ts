import { test } from 'tap'
import { once } from 'node:events'
import { parseConfig, startProxyServer } from './helpers/internals'
import { openHttp2Tunnel } from './helpers/http2-proxy'
import { startTcpDestination } from './helpers/tcp-destination'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { connectHttp2Listener } from './helpers/cli-http2'

test('server: close() ends open HTTP/2 tunnels and closes idle HTTP/2 sessions on the first and a second listener promptly', async (t) => {
  const destination = await startTcpDestination(t)
  const dir = t.testdir()
  const tls = await makeSelfSignedCertificate(dir)
  const listener = { host: '127.0.0.1', port: 0, tls: { cert: 'cert.pem', key: 'key.pem' }, http2: true }
  // Grace period and idle timeouts far beyond the test timeout: if close() waited for any of
  // them (or for the 72 s HTTP/2 session timeout), this test would time out.
  const server = await startProxyServer(parseConfig({
    log: { level: 'silent' },
    listen: [listener, listener],
    limits: { tunnelIdleTimeout: 600_000 },
    destinations: { allowedPorts: [destination.port], allowedNetworks: ['127.0.0.1/32'] }
  }, 'test.json', dir), { shutdownGracePeriod: 600_000 })
  let closed = false
  t.teardown(async () => { if (!closed) await server.close() })

  const sessions = await Promise.all(server.urls.flatMap((url) => [connectHttp2Listener(t, url, tls.cert), connectHttp2Listener(t, url, tls.cert)]))
  const [tunnelSessionA, idleSessionA, tunnelSessionB, idleSessionB] = sessions
  if (tunnelSessionA === undefined || idleSessionA === undefined || tunnelSessionB === undefined || idleSessionB === undefined) throw new Error('four sessions')
  const tunnels = await Promise.all([tunnelSessionA, tunnelSessionB].map((session) => openHttp2Tunnel(session, `127.0.0.1:${destination.port}`)))
  const upstreams = await Promise.all(tunnels.map(() => destination.nextConnection()))
  t.same(tunnels.map((tunnel) => tunnel.status), [200, 200])
  t.equal(server.app.forwardProxy.activeTunnels, 2)

  const ended = [
    ...tunnels.map((tunnel) => once(tunnel.stream, 'close')),
    // The test destination allows half-open sockets: the proxy's side ending is what counts.
    ...upstreams.map((upstream) => Promise.race([once(upstream, 'end'), once(upstream, 'close')])),
    ...sessions.map((session) => once(session, 'close'))
  ]
  const started = Date.now()
  await server.close()
  closed = true
  t.ok(Date.now() - started < 5000, `close() took ${Date.now() - started} ms`)
  await Promise.all(ended)
  t.equal(server.app.forwardProxy.activeTunnels, 0)
  t.ok(sessions.every((session) => session.closed || session.destroyed), 'every client session, idle or not, was closed by the server')
})

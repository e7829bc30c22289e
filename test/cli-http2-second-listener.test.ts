import { test } from 'tap'
import { openHttp2Tunnel } from './helpers/http2-proxy'
import { startTcpDestination } from './helpers/tcp-destination'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { startConfiguredServer } from './helpers/cli-server'
import { connectHttp2Listener } from './helpers/cli-http2'
import { basic } from './helpers/raw-client'
import { collectBytes } from './helpers/collect-bytes'
import { http2Request } from './helpers/intercepted-client'

test('server: a second listener with "http2": true (joined with attachServer) serves HTTP/2 tunnels, refusals and /healthz', async (t) => {
  const destination = await startTcpDestination(t)
  const dir = t.testdir()
  const tls = await makeSelfSignedCertificate(dir)
  const server = await startConfiguredServer(t, {
    listen: [{ host: '127.0.0.1', port: 0 }, { host: '127.0.0.1', port: 0, tls: { cert: 'cert.pem', key: 'key.pem' }, http2: true }],
    users: { alice: 's3cret' },
    destinations: { allowedPorts: [destination.port], allowedNetworks: ['127.0.0.1/32'] }
  }, dir)
  t.match(server.urls[1], /^https:\/\/127\.0\.0\.1:\d+$/)
  const session = await connectHttp2Listener(t, server.urls[1], tls.cert)
  const auth = { 'proxy-authorization': basic('alice', 's3cret') }

  const denied = await openHttp2Tunnel(session, '127.0.0.1:1', auth)
  t.equal(denied.status, 403, 'a port outside allowedPorts')
  t.match(denied.headers['proxy-status'], /error=http_request_denied/)
  const tunnel = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`, auth)
  t.equal(tunnel.status, 200)
  const upstream = await destination.nextConnection()
  const up = collectBytes(upstream, 5)
  tunnel.stream.write('hello')
  t.equal((await up).toString(), 'hello')
  const down = collectBytes(tunnel.stream, 5)
  upstream.write('world')
  t.equal((await down).toString(), 'world')

  const health = await http2Request(session, { ':path': '/healthz' })
  t.equal(health.status, 200)
  t.equal(health.body, '{"status":"ok"}')
})

import { test } from 'tap'
import { randomBytes } from 'node:crypto'
import type { TLSSocket } from 'node:tls'
import { openHttp2Tunnel } from './helpers/http2-proxy'
import { startTcpDestination } from './helpers/tcp-destination'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { startConfiguredServer } from './helpers/cli-server'
import { connectHttp2Listener } from './helpers/cli-http2'
import { basic } from './helpers/raw-client'
import { collectBytes } from './helpers/collect-bytes'

test('server: a TLS listener with "http2": true serves two authorized HTTP/2 CONNECT tunnels on one session, byte-exact both ways', async (t) => {
  const destination = await startTcpDestination(t)
  const dir = t.testdir()
  const tls = await makeSelfSignedCertificate(dir)
  const server = await startConfiguredServer(t, {
    listen: [{ host: '127.0.0.1', port: 0, tls: { cert: 'cert.pem', key: 'key.pem' }, http2: true }],
    users: { alice: 's3cret' },
    destinations: { allowedPorts: [destination.port], allowedNetworks: ['127.0.0.1/32'] }
  }, dir)
  t.match(server.urls[0], /^https:\/\/127\.0\.0\.1:\d+$/)
  const session = await connectHttp2Listener(t, server.urls[0], tls.cert)
  t.equal((session.socket as TLSSocket).alpnProtocol, 'h2', 'ALPN chose HTTP/2')

  const target = `127.0.0.1:${destination.port}`
  const refused = await openHttp2Tunnel(session, target)
  t.equal(refused.status, 407, 'no credentials: 407')
  t.match(refused.headers['proxy-authenticate'], /^Basic /)
  const auth = { 'proxy-authorization': basic('alice', 's3cret') }
  const a = await openHttp2Tunnel(session, target, auth)
  const upstreamA = await destination.nextConnection()
  const b = await openHttp2Tunnel(session, target, auth)
  const upstreamB = await destination.nextConnection()
  t.same([a.status, b.status], [200, 200])
  t.not(a.stream.id, b.stream.id, 'two streams of the same session')
  t.equal(server.app.forwardProxy.activeTunnels, 2)

  const size = 256 * 1024
  const bytes = { aUp: randomBytes(size), bUp: randomBytes(size), aDown: randomBytes(size), bDown: randomBytes(size) }
  const received = Promise.all([collectBytes(upstreamA, size), collectBytes(upstreamB, size), collectBytes(a.stream, size), collectBytes(b.stream, size)])
  a.stream.write(bytes.aUp)
  b.stream.write(bytes.bUp)
  upstreamA.write(bytes.aDown)
  upstreamB.write(bytes.bDown)
  const [aUp, bUp, aDown, bDown] = await received
  t.ok(aUp.equals(bytes.aUp) && bUp.equals(bytes.bUp), 'client to destination, each tunnel to its own connection')
  t.ok(aDown.equals(bytes.aDown) && bDown.equals(bytes.bDown), 'destination to client, each on its own stream')
})

import { test, type Test } from 'tap'
import { connect as tlsConnect } from 'node:tls'
import Fastify from 'fastify'
import { forwardProxy } from '../lib/index'
import { startHttp2Proxy } from './helpers/http2-proxy'
import { LOOPBACK_TEST_POLICY } from './helpers/servers'
import { startTcpDestination, type TcpDestination } from './helpers/tcp-destination'
import { makeSelfSignedCertificate, type TlsFixture } from './helpers/tls-fixture'
import { eventually } from './helpers/eventually'
import type { FastifyInstance } from 'fastify'

/**
 * Opens an HTTP/1.1 CONNECT tunnel over TLS, has the destination reset it after the 200, and
 * resolves once the client's connection has closed.
 */
async function resetUnderTlsClient (port: number, tls: TlsFixture, destination: TcpDestination): Promise<void> {
  const socket = tlsConnect({ host: '127.0.0.1', port, ca: tls.cert, ALPNProtocols: ['http/1.1'] })
  socket.on('error', () => {})
  await new Promise((resolve) => socket.once('secureConnect', resolve))
  socket.write(`CONNECT 127.0.0.1:${destination.port} HTTP/1.1\r\nHost: x\r\n\r\n`)
  const [head] = await new Promise<[Buffer]>((resolve) => socket.once('data', (chunk: Buffer) => resolve([chunk])))
  if (!head.toString().startsWith('HTTP/1.1 200 ')) throw new Error(`no tunnel: ${head.toString()}`)
  const upstream = await destination.nextConnection()
  const closed = new Promise((resolve) => socket.once('close', resolve))
  upstream.resetAndDestroy()
  await closed
}

async function assertStillServing (t: Test, app: FastifyInstance): Promise<void> {
  await eventually(() => app.forwardProxy.activeTunnels === 0)
  t.equal(app.forwardProxy.activeTunnels, 0, 'the slot is released')
  const res = await app.inject({ method: 'GET', url: '/healthz' })
  t.equal(res.body, 'ok', 'the proxy is still up')
}

test('on TLS listeners: a destination reset in an HTTP/1.1 tunnel over TLS (an HTTPS proxy) closes the client connection; no crash (TLS sockets cannot be TCP-reset)', async (t) => {
  const destination = await startTcpDestination(t)
  const tls = await makeSelfSignedCertificate(t.testdir())
  const app = Fastify({ https: { cert: tls.cert, key: tls.key } })
  app.get('/healthz', async () => 'ok')
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  await resetUnderTlsClient((app.server.address() as { port: number }).port, tls, destination)
  await assertStillServing(t, app)
})

test('on the HTTP/2 TLS port: a destination reset in an HTTP/1.1 tunnel (ALPN http/1.1) closes the client connection; no crash', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startHttp2Proxy(t, {}, (app) => { app.get('/healthz', async () => 'ok') })
  await resetUnderTlsClient(proxy.port, proxy.tls, destination)
  await assertStillServing(t, proxy.app)
})

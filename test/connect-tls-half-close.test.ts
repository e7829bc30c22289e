import { test, type Test } from 'tap'
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls'
import Fastify from 'fastify'
import { forwardProxy } from '../lib/index'
import { startHttp2Proxy } from './helpers/http2-proxy'
import { LOOPBACK_TEST_POLICY } from './helpers/servers'
import { readAll, startTcpDestination, type TcpDestination } from './helpers/tcp-destination'
import { makeSelfSignedCertificate, type TlsFixture } from './helpers/tls-fixture'
import { eventually } from './helpers/eventually'
import type { FastifyInstance } from 'fastify'

/**
 * Opens an HTTP/1.1 CONNECT tunnel over TLS, sends a question and ends (half-close); the
 * destination answers after that end.
 */
async function questionThenAnswer (t: Test, port: number, tls: TlsFixture, destination: TcpDestination, app: FastifyInstance): Promise<void> {
  // tls.connect takes allowHalfOpen (passed on to the socket); its typings omit it.
  const options: ConnectionOptions & { allowHalfOpen: boolean } = { host: '127.0.0.1', port, ca: tls.cert, ALPNProtocols: ['http/1.1'], allowHalfOpen: true }
  const socket = tlsConnect(options)
  socket.on('error', () => {})
  t.teardown(() => { socket.destroy() })
  await new Promise((resolve) => socket.once('secureConnect', resolve))
  socket.write(`CONNECT 127.0.0.1:${destination.port} HTTP/1.1\r\nHost: x\r\n\r\n`)
  const [head] = await new Promise<[Buffer]>((resolve) => socket.once('data', (chunk: Buffer) => resolve([chunk])))
  t.match(head.toString(), /^HTTP\/1\.1 200 [^]*\r\n\r\n$/)
  const upstream = await destination.nextConnection()
  const question = readAll(upstream)
  const answer = readAll(socket as never)
  socket.end('question, then FIN')
  t.equal(await question, 'question, then FIN', 'the destination got the question and the client\'s end')
  upstream.end('answer after the client finished sending')
  t.equal(await answer, 'answer after the client finished sending', 'the answer still reaches the client')
  await eventually(() => app.forwardProxy.activeTunnels === 0)
  t.equal(app.forwardProxy.activeTunnels, 0)
}

test('tunnel relay on an HTTPS proxy listener: half-close is carried across; the answer after the client\'s end still arrives', async (t) => {
  const destination = await startTcpDestination(t)
  const tls = await makeSelfSignedCertificate(t.testdir())
  const app = Fastify({ https: { cert: tls.cert, key: tls.key } })
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  await questionThenAnswer(t, (app.server.address() as { port: number }).port, tls, destination, app)
})

test('tunnel relay on the HTTP/2 TLS port, HTTP/1.1 side: half-close is carried across; the answer after the client\'s end still arrives', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startHttp2Proxy(t)
  await questionThenAnswer(t, proxy.port, proxy.tls, destination, proxy.app)
})

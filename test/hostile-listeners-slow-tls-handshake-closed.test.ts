import { test } from 'tap'
import { connect, type AddressInfo } from 'node:net'
import Fastify from 'fastify'
import { forwardProxy, proxyClientErrorHandler } from '../lib'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { portOf, startConfiguredServer } from './helpers/cli-server'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Agent, fetch } from 'undici'

const PARTIAL_CLIENT_HELLO = Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03])

/** Opens a TCP connection, sends `bytes` and never anything more; resolves once the server closes it. */
function stallAndWaitForClose (port: number, bytes: Buffer): Promise<Buffer> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => { if (bytes.length > 0) socket.write(bytes) })
    const received: Buffer[] = []
    socket.on('data', (chunk: Buffer) => received.push(chunk))
    socket.on('error', () => {})
    socket.once('close', () => resolve(Buffer.concat(received)))
  })
}

// Node's default TLS handshake timeout is 120 s: without the server's 10 s this test would hit its own limit.
test('slowloris on TLS listeners (HTTPS, HTTP/2): no or half a ClientHello is closed at the 10 s handshake timeout', { timeout: 45_000 }, async (t) => {
  const dir = t.testdir()
  await makeSelfSignedCertificate(dir)
  const tls = { cert: 'cert.pem', key: 'key.pem' }
  const server = await startConfiguredServer(t, {
    listen: [{ host: '127.0.0.1', port: 0, tls }, { host: '127.0.0.1', port: 0, tls }, { host: '127.0.0.1', port: 0, tls, http2: true }, { host: '127.0.0.1', port: 0, tls, http2: true }]
  }, dir)
  // All stall at once: the wait is one handshake timeout, whatever the number of listeners.
  const closes = server.urls.flatMap((url) => [Buffer.alloc(0), PARTIAL_CLIENT_HELLO].map(async (bytes) => ({
    url,
    bytes: bytes.length,
    reply: await stallAndWaitForClose(portOf(url), bytes)
  })))
  for (const { url, bytes, reply } of await Promise.all(closes)) {
    t.notOk(/HTTP\/1\.1 2/.test(reply.toString('latin1')), `${url}, ${bytes} bytes sent: closed without a success`)
  }
  const healthz = await fetch(`${server.urls[0] ?? ''}/healthz`, { dispatcher: new Agent({ connect: { ca: readFileSync(join(dir, 'cert.pem')) } }) })
  t.equal(healthz.status, 200, 'the server serves on')
})

test('with proxyClientErrorHandler on an HTTPS app, a TLS handshake that times out closes the connection (the handler used to answer it with HTTP and keep it open for good)', async (t) => {
  const tls = await makeSelfSignedCertificate(t.testdir())
  const app = Fastify({ logger: false, https: { cert: tls.cert, key: tls.key, handshakeTimeout: 300 }, clientErrorHandler: proxyClientErrorHandler })
  await app.register(forwardProxy)
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const port = (app.server.address() as AddressInfo).port
  const replies = await Promise.all([Buffer.alloc(0), PARTIAL_CLIENT_HELLO].map(async (bytes) => await stallAndWaitForClose(port, bytes)))
  t.same(replies.map((reply) => reply.length), [0, 0], 'closed with no HTTP answer written into the unfinished TLS connection')
})

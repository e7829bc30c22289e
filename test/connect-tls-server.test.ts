import { test } from 'tap'
import { connect as tlsConnect } from 'node:tls'
import Fastify from 'fastify'
import { forwardProxy } from '../lib/index'
import { LOOPBACK_TEST_POLICY, startOrigin } from './helpers/servers'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'

test('on TLS: HTTP/1.1 CONNECT through a TLS (HTTPS proxy) Fastify server opens a tunnel', async (t) => {
  const origin = await startOrigin(t)
  const tls = await makeSelfSignedCertificate(t.testdir())
  const app = Fastify({ https: { cert: tls.cert, key: tls.key } })
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const port = (app.server.address() as { port: number }).port
  const text = await new Promise<string>((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca: tls.cert }, () => {
      socket.write(`CONNECT 127.0.0.1:${origin.port} HTTP/1.1\r\nHost: x\r\n\r\nGET /through-tls HTTP/1.1\r\nHost: o\r\nConnection: close\r\n\r\n`)
    })
    let received = ''
    socket.on('data', (chunk: Buffer) => { received += chunk.toString() })
    socket.on('error', reject)
    socket.on('close', () => resolve(received))
  })
  t.match(text, /^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 OK/)
  t.equal(origin.requests[0]?.url, '/through-tls')
})

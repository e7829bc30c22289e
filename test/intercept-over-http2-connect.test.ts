import { connect as http2Connect } from 'node:http2'
import type { AddressInfo } from 'node:net'
import Fastify, { type FastifyInstance } from 'fastify'
import { test } from 'tap'
import { forwardProxy, tlsInterception, type ForwardProxyInterception } from '../lib/index'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'
import { http2OverTls, http2Request, rawTlsExchange, startInnerTls } from './helpers/intercepted-client'
import { openHttp2Tunnel } from './helpers/http2-proxy'
import { LOOPBACK_TEST_POLICY } from './helpers/servers'
import { eventually } from './helpers/eventually'

test('a tunnel opened by an HTTP/2 CONNECT stream is intercepted too: HTTP/1.1 and HTTP/2 spoken inside the stream reach the origin, the hooks see request.interception, and each stream holds a tunnel slot until it closes', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  // The proxy's own TLS listener reuses the operator-issued leaf for 127.0.0.1.
  const app = Fastify({
    logger: false,
    http2: true,
    https: { allowHTTP1: true, key: pki.interceptionLeaf.key, cert: pki.interceptionLeaf.cert }
  }) as unknown as FastifyInstance
  const seen: Array<ForwardProxyInterception | null> = []
  app.addHook('onRequest', async (request) => { seen.push(request.interception) })
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY })
  await app.register(tlsInterception, { trustedDestinationCa: pki.destinationCa.cert, ...interceptAll(pki) })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const port = (app.server.address() as AddressInfo).port
  const session = http2Connect(`https://127.0.0.1:${port}`, { ca: pki.operatorCa.cert })
  session.on('error', () => {})
  t.teardown(() => session.destroy())
  const target = `127.0.0.1:${origin.port}`

  const first = await openHttp2Tunnel(session, target)
  t.equal(first.status, 200)
  const inner1 = await startInnerTls(first.stream, { ca: pki.operatorCa.cert })
  t.equal(inner1.authorized, true)
  const h1 = await rawTlsExchange(inner1, `GET /h1-in-h2 HTTP/1.1\r\nHost: ${target}\r\nConnection: close\r\n\r\n`)
  t.equal(h1.status, 200)

  const second = await openHttp2Tunnel(session, target)
  const inner2 = await startInnerTls(second.stream, { ca: pki.operatorCa.cert, alpn: ['h2'] })
  t.equal(inner2.alpnProtocol, 'h2')
  t.equal(app.forwardProxy.activeTunnels, 1, 'the stream whose TLS connection closed gave its slot back; the open one holds one')
  const inner = await http2OverTls(t, inner2, target)
  const h2 = await http2Request(inner, { ':path': '/h2-in-h2', ':authority': target })
  t.equal(h2.status, 200)

  t.same(origin.requests.map((request) => request.url), ['/h1-in-h2', '/h2-in-h2'])
  t.same(seen.filter((interception) => interception !== null), [
    { destination: { host: '127.0.0.1', port: origin.port } },
    { destination: { host: '127.0.0.1', port: origin.port } }
  ])
  inner.close()
  await eventually(() => app.forwardProxy.activeTunnels === 0)
})

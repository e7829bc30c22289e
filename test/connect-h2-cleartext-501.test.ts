import { test } from 'tap'
import { connect, type ClientHttp2Session } from 'node:http2'
import type { AddressInfo } from 'node:net'
import Fastify, { type FastifyInstance } from 'fastify'
import { forwardProxy } from '../lib/index'
import { LOOPBACK_TEST_POLICY, startSentinel } from './helpers/servers'
import { openHttp2Tunnel } from './helpers/http2-proxy'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('HTTP/2 CONNECT over cleartext h2c (no TLS) gets 501 with Proxy-Status, and nothing is dialed', async (t) => {
  const sentinel = await startSentinel(t)
  const app = Fastify({ http2: true }) as unknown as FastifyInstance
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const session: ClientHttp2Session = connect(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`)
  session.on('error', () => {})
  t.teardown(() => { if (!session.destroyed) session.destroy() })

  const refused = await openHttp2Tunnel(session, `127.0.0.1:${sentinel.port}`)
  t.equal(refused.status, 501)
  t.match(refused.headers['proxy-status'], /^fastify-forward-proxy; error=http_request_error/)
  await refused.body()
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing dialed')
  t.equal(app.forwardProxy.activeTunnels, 0)
  session.close()
})

import { test } from 'tap'
import { once } from 'node:events'
import type { ForwardProxyUser } from '../lib/index'
import { connectHttp2, openHttp2Tunnel, startHttp2Proxy } from './helpers/http2-proxy'
import { basic } from './helpers/raw-client'
import { startSentinel } from './helpers/servers'
import { readAll, startTcpDestination } from './helpers/tcp-destination'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const AUTH = { auth: { users: { alice: 's3cret' } } }

test('over HTTP/2: each CONNECT stream is authenticated on its own: with proxy-authorization 200 and request.proxyUser; without, or wrong, 407 with Proxy-Authenticate and Proxy-Status on that stream only', async (t) => {
  const sentinel = await startSentinel(t)
  const destination = await startTcpDestination(t)
  const seen: Array<ForwardProxyUser | null> = []
  const proxy = await startHttp2Proxy(t, AUTH, (app) => {
    app.addHook('preHandler', async (request) => { if (request.method === 'CONNECT') seen.push(request.proxyUser) })
  })
  const session = await connectHttp2(t, proxy)

  const tunnel = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`, { 'proxy-authorization': basic('alice', 's3cret') })
  t.equal(tunnel.status, 200, 'the authenticated stream opens a tunnel')
  const upstream = await destination.nextConnection()

  const refused = await openHttp2Tunnel(session, `127.0.0.1:${sentinel.port}`)
  t.equal(refused.status, 407, 'a later stream without credentials on the same session is refused')
  t.equal(refused.headers['proxy-authenticate'], 'Basic realm="fastify-forward-proxy", charset="UTF-8"')
  t.match(refused.headers['proxy-status'], /^fastify-forward-proxy; error=http_request_denied/)
  await refused.body()

  const wrong = await openHttp2Tunnel(session, `127.0.0.1:${sentinel.port}`, { 'proxy-authorization': basic('alice', 'wrong') })
  t.equal(wrong.status, 407, 'so is one with a wrong password')
  await wrong.body()
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing dialed for the refused streams')

  const arrived = readAll(upstream)
  tunnel.stream.end('the authorized tunnel still relays')
  t.equal(await arrived, 'the authorized tunnel still relays')
  upstream.end()
  await once(tunnel.stream, 'close')
  t.same(seen, [{ name: 'alice' }], 'the app\'s preHandler saw the authenticated user on the tunnel stream (refused streams never reach it)')
  t.notOk(session.closed || session.destroyed, 'the 407s left the session open')
})

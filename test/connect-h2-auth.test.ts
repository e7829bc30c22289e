import { test } from 'tap'
import { once } from 'node:events'
import type { ForwardProxyUser } from '../lib/index'
import { connectHttp2, openHttp2Tunnel, startHttp2Proxy } from './helpers/http2-proxy'
import { basic } from './helpers/raw-client'
import { startSentinel } from './helpers/servers'
import { readAll, startTcpDestination } from './helpers/tcp-destination'

const AUTH = { auth: { users: { alice: 's3cret' } } }

test('SPEC 5.1 / HOSTILE 16 over HTTP/2: a CONNECT stream without credentials gets 407 with Proxy-Authenticate and Proxy-Status; one with them gets 200 and request.proxyUser', async (t) => {
  const sentinel = await startSentinel(t)
  const destination = await startTcpDestination(t)
  const seen: Array<ForwardProxyUser | null> = []
  const proxy = await startHttp2Proxy(t, AUTH, (app) => {
    app.addHook('preHandler', async (request) => { if (request.method === 'CONNECT') seen.push(request.proxyUser) })
  })
  const session = await connectHttp2(t, proxy)

  const refused = await openHttp2Tunnel(session, `127.0.0.1:${sentinel.port}`)
  t.equal(refused.status, 407)
  t.equal(refused.headers['proxy-authenticate'], 'Basic realm="fastify-forward-proxy", charset="UTF-8"')
  t.match(refused.headers['proxy-status'], /^fastify-forward-proxy; error=http_request_denied/)
  await refused.body()

  const wrong = await openHttp2Tunnel(session, `127.0.0.1:${sentinel.port}`, { 'proxy-authorization': basic('alice', 'wrong') })
  t.equal(wrong.status, 407, 'a wrong password on another stream of the same session is refused too')
  await wrong.body()
  t.equal(sentinel.connections.length, 0, 'nothing dialed for the refused streams')

  const tunnel = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`, { 'proxy-authorization': basic('alice', 's3cret') })
  t.equal(tunnel.status, 200)
  const upstream = await destination.nextConnection()
  const arrived = readAll(upstream)
  tunnel.stream.end('hello through an authorized HTTP/2 tunnel')
  t.equal(await arrived, 'hello through an authorized HTTP/2 tunnel')
  upstream.end()
  await once(tunnel.stream, 'close')
  t.same(seen, [{ name: 'alice' }], 'the app\'s preHandler saw the authenticated user on the tunnel stream only')
  t.notOk(session.closed || session.destroyed, 'the 407s left the session open')
})

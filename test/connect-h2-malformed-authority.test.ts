import { test } from 'tap'
import { connectHttp2, openHttp2Tunnel, startHttp2Proxy } from './helpers/http2-proxy'
import { startSentinel } from './helpers/servers'

test('HOSTILE 9 over HTTP/2: a CONNECT :authority without a port, with userinfo, port 0 or out of range gets 400 and nothing is dialed; the session goes on', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startHttp2Proxy(t)
  const session = await connectHttp2(t, proxy)
  for (const authority of ['example.com', '127.0.0.1', `user@127.0.0.1:${sentinel.port}`, `user:pw@127.0.0.1:${sentinel.port}`, '127.0.0.1:0', '127.0.0.1:65536']) {
    const refused = await openHttp2Tunnel(session, authority)
    t.equal(refused.status, 400, authority)
    t.match(refused.headers['proxy-status'], /^fastify-forward-proxy; error=http_request_error/, authority)
    await refused.body()
  }
  t.equal(sentinel.connections.length, 0, 'nothing dialed')
  t.notOk(session.closed || session.destroyed, 'the session is still open')
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

import { test } from 'tap'
import { constants } from 'node:http2'
import { connectHttp2, openHttp2Tunnel, startHttp2Proxy } from './helpers/http2-proxy'
import { startSentinel } from './helpers/servers'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

// nghttp2 1.64 and later (bundled with Node 22 and 24; Node 20 has 1.61) treats an :authority
// that holds userinfo ('@') as a malformed request and resets the stream with PROTOCOL_ERROR
// itself, before Node hands the stream to the proxy. With an older nghttp2 the request reaches
// the proxy, which answers 400. Either way the client gets a clear refusal and nothing is dialed.
const [major = 0, minor = 0] = process.versions.nghttp2?.split('.').map(Number) ?? []
const NGHTTP2_REFUSES_USERINFO = major > 1 || (major === 1 && minor >= 64)

test('over HTTP/2: a CONNECT :authority without a port, with userinfo, port 0 or out of range is refused (400, or a stream reset where nghttp2 refuses userinfo first); nothing dialed, the session goes on', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startHttp2Proxy(t)
  const session = await connectHttp2(t, proxy)
  for (const authority of ['example.com', '127.0.0.1', `user@127.0.0.1:${sentinel.port}`, `user:pw@127.0.0.1:${sentinel.port}`, '127.0.0.1:0', '127.0.0.1:65536']) {
    if (NGHTTP2_REFUSES_USERINFO && authority.includes('@')) {
      // No response head at all (a 200 would resolve this and fail), just the stream reset.
      await t.rejects(openHttp2Tunnel(session, authority), { message: /^stream closed before a response/, rstCode: constants.NGHTTP2_PROTOCOL_ERROR }, `${authority}: reset by Node's HTTP/2 layer`)
      continue
    }
    const refused = await openHttp2Tunnel(session, authority)
    t.equal(refused.status, 400, authority)
    t.match(refused.headers['proxy-status'], /^fastify-forward-proxy; error=http_request_error/, authority)
    await refused.body()
  }
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing dialed')
  t.notOk(session.closed || session.destroyed, 'the session is still open')
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

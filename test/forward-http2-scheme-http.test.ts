import { test } from 'tap'
import { connectHttp2, startHttp2Proxy } from './helpers/http2-proxy'
import { startOrigin } from './helpers/servers'
import { basic } from './helpers/raw-client'
import type { OutgoingHttpHeaders } from 'node:http2'
import { http2Request, type Http2Response } from './helpers/intercepted-client'
import { LOOPBACK_TEST_POLICY } from './helpers/servers'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('an HTTP/2 request with :scheme http on the TLS listener is forwarded like absolute-form http://: hop-by-hop dropped, Via added both ways, body streamed, Host from :authority', async (t) => {
  const origin = await startOrigin(t, (req, res, body) => {
    res.setHeader('connection', 'x-origin-hop')
    res.setHeader('x-origin-hop', 'dropped')
    res.setHeader('content-type', 'text/plain')
    res.end(`${req.method ?? ''} ${req.url ?? ''} ${body}`)
  })
  const proxy = await startHttp2Proxy(t)
  const session = await connectHttp2(t, proxy)
  const authority = `127.0.0.1:${origin.port}`
  const answer = await http2Request(session, { ':method': 'POST', ':scheme': 'http', ':authority': authority, ':path': '/submit?x=1', 'x-client': 'kept', te: 'trailers' }, 'hello')
  t.equal(answer.status, 200)
  t.equal(answer.body, 'POST /submit?x=1 hello')
  t.equal(answer.headers['x-origin-hop'], undefined, 'a Connection-listed response header is dropped')
  t.match(answer.headers.via, /fastify-forward-proxy/, 'Via on the response')
  const seen = origin.requests[0]
  t.equal(seen?.headers.host, authority, 'Host is the :authority')
  t.equal(seen?.headers['x-client'], 'kept')
  t.equal(seen?.headers.te, undefined, 'TE is hop-by-hop')
  t.match(seen?.headers.via, /fastify-forward-proxy/)
})

test(':scheme http requests get the same authentication, policy and Max-Forwards as http:// on HTTP/1.1', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startHttp2Proxy(t, { auth: { users: { alice: 'pw' } }, destinations: { ...LOOPBACK_TEST_POLICY, deniedHosts: ['localhost'] } })
  const session = await connectHttp2(t, proxy)
  const authority = `127.0.0.1:${origin.port}`
  const request = (headers: OutgoingHttpHeaders): Promise<Http2Response> => http2Request(session, { ':scheme': 'http', ':authority': authority, ':path': '/', ...headers })
  const unauthenticated = await request({})
  t.equal(unauthenticated.status, 407)
  t.match(unauthenticated.headers['proxy-authenticate'], /^Basic realm=/)
  t.equal((await request({ 'proxy-authorization': basic('alice', 'pw') })).status, 200)
  t.equal(origin.requests[0]?.headers['proxy-authorization'], undefined, 'credentials are never forwarded')
  const options = await request({ ':method': 'OPTIONS', 'max-forwards': '0', 'proxy-authorization': basic('alice', 'pw') })
  t.equal(options.status, 200, 'OPTIONS at Max-Forwards 0 is answered by the proxy')
  const denied = await http2Request(session, { ':scheme': 'http', ':authority': 'localhost:1', ':path': '/', 'proxy-authorization': basic('alice', 'pw') })
  t.equal(denied.status, 403, 'the destination policy applies')
  t.match(denied.headers['proxy-status'], /error=http_request_denied; details="host not allowed"/)
  t.equal(origin.requests.length, 1)
  await expectNothingDialedBefore(t, origin.accepts, 'only the authenticated request reached the origin', { after: 1 })
})

test('a :scheme http request whose :authority is not a usable host and port gets 400; :scheme https requests still reach the application\'s own routes', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startHttp2Proxy(t, {}, (app) => { app.get('/own', async () => 'own route') })
  const session = await connectHttp2(t, proxy)
  const own = await http2Request(session, { ':path': '/own' })
  t.equal(own.status, 200)
  t.equal(own.body, 'own route')
  const malformed = await http2Request(session, { ':scheme': 'http', ':authority': '127.0.0.1:99999', ':path': '/' })
  t.equal(malformed.status, 400)
  t.match(malformed.headers['proxy-status'], /error=http_request_error; details="malformed"/)
  t.equal(origin.requests.length, 0)
})

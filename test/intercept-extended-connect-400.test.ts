import { test } from 'tap'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'
import { http2OverTls, http2Request, openInterceptedTls } from './helpers/intercepted-client'

test('WebSockets over HTTP/2 (extended CONNECT with :protocol) inside an intercepted tunnel get 400; the session goes on', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  const target = `127.0.0.1:${origin.port}`
  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert, alpn: ['h2'] })
  const session = await http2OverTls(t, socket, target)
  await new Promise<void>((resolve) => {
    if (session.remoteSettings.enableConnectProtocol === true) resolve()
    else session.once('remoteSettings', () => resolve())
  })
  t.equal(session.remoteSettings.enableConnectProtocol, true, 'the endpoint advertises extended CONNECT so clients try and get a status')

  const websocket = await http2Request(session, { ':method': 'CONNECT', ':protocol': 'websocket', ':scheme': 'https', ':path': '/chat', ':authority': target, 'sec-websocket-version': '13' })
  t.equal(websocket.status, 400)
  t.match(websocket.headers['proxy-status'], /error=http_request_error; details="extended CONNECT inside an intercepted tunnel"/)

  const plainConnect = await http2Request(session, { ':method': 'CONNECT', ':authority': target })
  t.equal(plainConnect.status, 400, 'a plain CONNECT inside is refused too')

  const after = await http2Request(session, { ':path': '/after', ':authority': target })
  t.equal(after.status, 200)
  t.same(origin.requests.map((seen) => seen.url), ['/after'])
})

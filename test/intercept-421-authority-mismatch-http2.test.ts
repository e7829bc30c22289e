import { test } from 'tap'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'
import { http2OverTls, http2Request, openInterceptedTls } from './helpers/intercepted-client'

test('inside an intercepted tunnel spoken as HTTP/2, an :authority other than the CONNECT target (connection coalescing) gets 421 and is never forwarded, while the matching one is, on the same session', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const hooksSaw: string[] = []
  const proxy = await startInterceptingProxy(t, pki, {
    interception: interceptAll(pki),
    setup (app) { app.addHook('onRequest', async (request) => { if (request.interception !== null) hooksSaw.push(request.url) }) }
  })
  const target = `127.0.0.1:${origin.port}`
  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert, alpn: ['h2'] })
  t.equal(socket.alpnProtocol, 'h2')
  const session = await http2OverTls(t, socket, target)

  const coalesced = await http2Request(session, { ':path': '/coalesced', ':authority': `localhost:${origin.port}` })
  t.equal(coalesced.status, 421)
  t.match(coalesced.headers['proxy-status'], /^fastify-forward-proxy; error=http_request_error; details="Host does not match the CONNECT target"/)
  const otherPort = await http2Request(session, { ':path': '/other-port', ':authority': '127.0.0.1' })
  t.equal(otherPort.status, 421, 'an omitted port means 443, not the tunnel port')

  const same = await http2Request(session, { ':path': '/same', ':authority': target })
  t.equal(same.status, 200)
  t.same(origin.requests.map((seen) => seen.url), ['/same'], 'only the matching request reached the origin')
  t.same(hooksSaw, ['/same'], 'misdirected requests never reached the app hooks')
  t.equal((JSON.parse(same.body) as { httpVersion: string }).httpVersion, '1.1', 'the request left over HTTP/1.1')
})

import { test } from 'tap'
import { startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'
import { makeInterceptionPki } from './helpers/interception-pki'
import { interceptAll, startInterceptingProxy, startTlsOrigin } from './helpers/intercepting-proxy'
import { openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'

test('a request with two Host headers gets 400 (details "repeated Host"), over http:// forwarding and inside an intercepted tunnel, and is never sent on', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  const forwarded = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nHost: other.example\r\nConnection: close\r\n\r\n`)
  t.equal(forwarded.status, 400)
  t.match(forwarded.text, /proxy-status: fastify-forward-proxy; error=http_request_error; details="repeated Host"/i)
  await expectNothingDialedBefore(t, origin.accepts)

  const pki = await makeInterceptionPki(t)
  const tlsOrigin = await startTlsOrigin(t, pki)
  const intercepting = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  const authority = `127.0.0.1:${tlsOrigin.port}`
  const inner = await openInterceptedTls(t, intercepting.port, authority, { ca: pki.operatorCa.cert })
  const inside = await rawTlsExchange(inner, `GET / HTTP/1.1\r\nHost: ${authority}\r\nHost: PLACEHOLDER_OR_OTHER\r\nConnection: close\r\n\r\n`)
  t.equal(inside.status, 400)
  t.match(inside.head, /details="repeated Host"/)
  await expectNothingDialedBefore(t, tlsOrigin.accepts)
})

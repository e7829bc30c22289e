import { test } from 'tap'
import type { ServerResponse } from 'node:http'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'
import { http2OverTls, http2Request, openInterceptedTls } from './helpers/intercepted-client'
import { eventually } from './helpers/eventually'
import { within } from './helpers/within'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('attacker\'s review 4: requests inside an intercepted HTTP/2 tunnel count toward limits.maxConcurrentRequests; over it 503 connection_limit_reached, the slot comes back when the response ends', async (t) => {
  const pki = await makeInterceptionPki(t)
  const held: ServerResponse[] = []
  const origin = await startTlsOrigin(t, pki, (req, res) => { if (req.url === '/held') held.push(res); else res.end('ok') })
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { limits: { maxConcurrentRequests: 1 } },
    interception: interceptAll(pki)
  })
  const target = `127.0.0.1:${origin.port}`
  const tls = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert, servername: 'localhost', alpn: ['h2'] })
  const session = await http2OverTls(t, tls, target)

  const first = http2Request(session, { ':method': 'GET', ':path': '/held' })
  await eventually(() => held.length === 1)
  t.equal(proxy.app.forwardProxy.activeRequests, 1, 'the held request takes the only slot')
  const second = await within(http2Request(session, { ':method': 'GET', ':path': '/second' }), 'the answer to the second request', 5_000)
  t.equal(second.status, 503)
  t.match(String(second.headers['proxy-status']), /error=connection_limit_reached/)
  t.equal(origin.requests.length, 1)
  await expectNothingDialedBefore(t, origin.accepts, 'the second request did not reach the origin', { after: 1 })

  held[0]?.end('released')
  const answered = await within(first, 'the held response', 5_000)
  t.equal(answered.status, 200)
  await eventually(() => proxy.app.forwardProxy.activeRequests === 0)
  t.equal(proxy.app.forwardProxy.activeRequests, 0, 'the slot is free again')
  const third = await within(http2Request(session, { ':method': 'GET', ':path': '/third' }), 'the answer to the third request', 5_000)
  t.equal(third.status, 200, 'the next request is forwarded')
})

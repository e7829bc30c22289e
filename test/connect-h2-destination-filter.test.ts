import { test } from 'tap'
import { connect } from 'node:http2'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, staticProvider } from './helpers/intercepting-proxy'
import { openHttp2Tunnel } from './helpers/http2-proxy'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { startCountingDestination } from './helpers/counting-destination'
import { eventually } from './helpers/eventually'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('destination filter over HTTP/2: a filter returning false refuses the CONNECT stream with 403 before the selector and any dial; the session goes on', async (t) => {
  const pki = await makeInterceptionPki(t)
  const listenerTls = await makeSelfSignedCertificate(t.testdir())
  const destination = await startCountingDestination(t)
  let selectorCalls = 0
  const proxy = await startInterceptingProxy(t, pki, {
    server: { http2: true, https: { allowHTTP1: true, key: listenerTls.key, cert: listenerTls.cert } } as object,
    interception: {
      certificateProvider: staticProvider(pki),
      selector: { shouldIntercept: () => { selectorCalls++; return false } },
      destinationFilters: [{ allowTunnel: (request) => request.headers['x-allowed'] === 'yes' }]
    }
  })
  const session = connect(`https://127.0.0.1:${proxy.port}`, { ca: listenerTls.cert })
  session.on('error', () => {})
  t.teardown(() => { session.destroy() })

  const refused = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`)
  t.equal(refused.status, 403)
  t.match(String(refused.headers['proxy-status']), /error=http_request_denied; details="refused by a destination filter"/)
  t.equal(selectorCalls, 0, 'the selector never ran for the refused stream')

  const allowed = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`, { 'x-allowed': 'yes' })
  t.equal(allowed.status, 200, 'an allowed stream on the same session opens its tunnel')
  await eventually(() => destination.accepted >= 1)
  await expectNothingDialedBefore(t, destination.accepts, 'only the allowed stream was dialed', { after: 1 })
  allowed.stream.close()
})

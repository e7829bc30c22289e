import { test } from 'tap'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { startHttpsOrigin, startInterceptedPath } from './helpers/https-destination'

test('By default, a self-signed destination certificate gets 502 tls_certificate_error', async (t) => {
  const fixture = await makeSelfSignedCertificate(t.testdir())
  const origin = await startHttpsOrigin(t, { cert: fixture.cert, key: fixture.key })
  const forwarder = await startInterceptedPath(t, origin.port)

  const res = await forwarder.request('/')
  t.equal(res.statusCode, 502)
  t.equal(res.headers['proxy-status'], 'fastify-forward-proxy; error=tls_certificate_error; details="DEPTH_ZERO_SELF_SIGNED_CERT"')
  await res.body.dump()
  t.equal(origin.requests.length, 0)
})

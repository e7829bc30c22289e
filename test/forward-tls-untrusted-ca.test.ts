import { test } from 'tap'
import { certificateDirectory, makeCa, issueLeaf } from './helpers/destination-certificates'
import { startHttpsOrigin, startInterceptedPath } from './helpers/https-destination'

test('a destination certificate from a CA outside the trust store gets 502 tls_certificate_error, and no request reaches it', async (t) => {
  const dir = certificateDirectory(t)
  const ca = await makeCa(dir, 'unknown-ca')
  const leaf = await issueLeaf(dir, 'leaf', ca)
  const origin = await startHttpsOrigin(t, { cert: leaf.cert, key: leaf.key })
  const forwarder = await startInterceptedPath(t, origin.port)

  const res = await forwarder.request('/secret')
  t.equal(res.statusCode, 502)
  t.equal(res.headers['proxy-status'], 'fastify-forward-proxy; error=tls_certificate_error; details="UNABLE_TO_VERIFY_LEAF_SIGNATURE"')
  t.notMatch(await res.body.text(), /unknown-ca|\n\s+at |Error/, 'no certificate names or internals in the body')
  t.equal(origin.requests.length, 0)
})

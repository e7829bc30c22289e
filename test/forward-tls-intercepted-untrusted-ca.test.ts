import { test } from 'tap'
import { certificateDirectory, makeCa, issueLeaf } from './helpers/destination-certificates'
import { startHttpsOrigin } from './helpers/https-destination'
import { interceptEverything } from './helpers/intercepted-forwarding'

test('End to end: inside an intercepted tunnel, a destination certificate from an untrusted CA gets 502 tls_certificate_error; the client (trusting only the operator CA) gets the answer over the intercepted TLS session', async (t) => {
  const dir = certificateDirectory(t)
  const stranger = await makeCa(dir, 'stranger-ca')
  const leaf = await issueLeaf(dir, 'leaf', stranger)
  const origin = await startHttpsOrigin(t, { cert: leaf.cert, key: leaf.key })
  const setup = await interceptEverything(t)

  const res = await setup.get(origin.port, '/account')
  t.equal(res.status, 502)
  t.equal(res.proxyStatus, 'fastify-forward-proxy; error=tls_certificate_error; details="UNABLE_TO_VERIFY_LEAF_SIGNATURE"')
  t.equal(origin.requests.length, 0)
})

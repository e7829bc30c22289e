import { test } from 'tap'
import { certificateDirectory, makeCa, issueLeaf } from './helpers/destination-certificates'
import { startHttpsOrigin } from './helpers/https-destination'
import { interceptEverything } from './helpers/intercepted-forwarding'

test('inside an intercepted tunnel, a trusted destination certificate for another name gets 502 tls_certificate_error', async (t) => {
  const dir = certificateDirectory(t)
  const ca = await makeCa(dir, 'ca')
  const leaf = await issueLeaf(dir, 'leaf', ca, { san: 'DNS:elsewhere.example' })
  const origin = await startHttpsOrigin(t, { cert: leaf.cert, key: leaf.key })
  const setup = await interceptEverything(t, { trustedDestinationCa: ca.cert })

  const res = await setup.get(origin.port)
  t.equal(res.status, 502)
  t.equal(res.proxyStatus, 'fastify-forward-proxy; error=tls_certificate_error; details="ERR_TLS_CERT_ALTNAME_INVALID"')
  t.notMatch(res.body, /elsewhere/)
})

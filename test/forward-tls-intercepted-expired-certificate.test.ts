import { test } from 'tap'
import { certificateDirectory, makeCa, issueLeaf } from './helpers/destination-certificates'
import { startHttpsOrigin } from './helpers/https-destination'
import { interceptEverything } from './helpers/intercepted-forwarding'

test('inside an intercepted tunnel, an expired destination certificate from a trusted CA gets 502 tls_certificate_error', async (t) => {
  const dir = certificateDirectory(t)
  const ca = await makeCa(dir, 'ca')
  const leaf = await issueLeaf(dir, 'leaf', ca, { startDate: '20200101000000Z', endDate: '20200201000000Z' })
  const origin = await startHttpsOrigin(t, { cert: leaf.cert, key: leaf.key })
  const setup = await interceptEverything(t, { trustedDestinationCa: ca.cert })

  const res = await setup.get(origin.port)
  t.equal(res.status, 502)
  t.equal(res.proxyStatus, 'fastify-forward-proxy; error=tls_certificate_error; details="CERT_HAS_EXPIRED"')
  t.equal(origin.requests.length, 0)
})

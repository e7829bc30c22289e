import { test } from 'tap'
import { certificateDirectory, makeCa, issueLeaf } from './helpers/destination-certificates'
import { startHttpsOrigin, startInterceptedPath } from './helpers/https-destination'

test('an expired destination certificate from a trusted CA gets 502 tls_certificate_error', async (t) => {
  const dir = certificateDirectory(t)
  const ca = await makeCa(dir, 'ca')
  const leaf = await issueLeaf(dir, 'leaf', ca, { startDate: '20200101000000Z', endDate: '20200201000000Z' })
  const origin = await startHttpsOrigin(t, { cert: leaf.cert, key: leaf.key })
  const forwarder = await startInterceptedPath(t, origin.port, { trustedDestinationCa: ca.cert })

  const res = await forwarder.request('/')
  t.equal(res.statusCode, 502)
  t.equal(res.headers['proxy-status'], 'fastify-forward-proxy; error=tls_certificate_error; details="CERT_HAS_EXPIRED"')
  await res.body.dump()
  t.equal(origin.requests.length, 0)
})

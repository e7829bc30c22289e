import { test } from 'tap'
import { certificateDirectory, makeCa, issueLeaf } from './helpers/destination-certificates'
import { startHttpsOrigin, startInterceptedPath } from './helpers/https-destination'

test('a destination certificate valid only from 2099 gets 502 tls_certificate_error', async (t) => {
  const dir = certificateDirectory(t)
  const ca = await makeCa(dir, 'ca')
  const leaf = await issueLeaf(dir, 'leaf', ca, { startDate: '20990101000000Z', endDate: '20990201000000Z' })
  const origin = await startHttpsOrigin(t, { cert: leaf.cert, key: leaf.key })
  const forwarder = await startInterceptedPath(t, origin.port, { trustedDestinationCa: ca.cert })

  const res = await forwarder.request('/')
  t.equal(res.statusCode, 502)
  t.equal(res.headers['proxy-status'], 'fastify-forward-proxy; error=tls_certificate_error; details="CERT_NOT_YET_VALID"')
  await res.body.dump()
  t.equal(origin.requests.length, 0)
})

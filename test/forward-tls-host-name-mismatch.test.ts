import { test } from 'tap'
import { certificateDirectory, makeCa, issueLeaf } from './helpers/destination-certificates'
import { startHttpsOrigin, startInterceptedPath } from './helpers/https-destination'

test('a trusted certificate for another host name gets 502 tls_certificate_error without naming the certificate\'s hosts', async (t) => {
  const dir = certificateDirectory(t)
  const ca = await makeCa(dir, 'ca')
  const leaf = await issueLeaf(dir, 'leaf', ca, { san: 'DNS:internal-only.example' })
  const origin = await startHttpsOrigin(t, { cert: leaf.cert, key: leaf.key })
  const forwarder = await startInterceptedPath(t, origin.port, { trustedDestinationCa: ca.cert })

  const res = await forwarder.request('/')
  t.equal(res.statusCode, 502)
  const status = String(res.headers['proxy-status'])
  t.equal(status, 'fastify-forward-proxy; error=tls_certificate_error; details="ERR_TLS_CERT_ALTNAME_INVALID"')
  t.notMatch(await res.body.text(), /internal-only/)
  t.equal(origin.requests.length, 0)
})

import { test } from 'tap'
import { certificateDirectory, makeCa, issueLeaf } from './helpers/destination-certificates'
import { startHttpsOrigin } from './helpers/https-destination'
import { interceptEverything } from './helpers/intercepted-forwarding'

test('inside an intercepted tunnel, a TLS 1.0/1.1-only destination gets 502 tls_protocol_error', async (t) => {
  const dir = certificateDirectory(t)
  const ca = await makeCa(dir, 'ca')
  const leaf = await issueLeaf(dir, 'leaf', ca)
  const origin = await startHttpsOrigin(t, { cert: leaf.cert, key: leaf.key, minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' })
  const setup = await interceptEverything(t, { trustedDestinationCa: ca.cert })

  const res = await setup.get(origin.port)
  t.equal(res.status, 502)
  t.match(res.proxyStatus, /^fastify-forward-proxy; error=tls_protocol_error; details="ERR_SSL_[A-Z0-9_]+"$/)
  t.equal(origin.requests.length, 0)
})

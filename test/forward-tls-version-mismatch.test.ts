import { test } from 'tap'
import { certificateDirectory, makeCa, issueLeaf } from './helpers/destination-certificates'
import { startHttpsOrigin, startInterceptedPath } from './helpers/https-destination'

test('a TLS 1.0/1.1-only destination gets 502 tls_protocol_error (the proxy requires TLS 1.2 or later)', async (t) => {
  const dir = certificateDirectory(t)
  const ca = await makeCa(dir, 'ca')
  const leaf = await issueLeaf(dir, 'leaf', ca)
  const origin = await startHttpsOrigin(t, {
    cert: leaf.cert,
    key: leaf.key,
    minVersion: 'TLSv1',
    maxVersion: 'TLSv1.1',
    // OpenSSL 3 refuses TLS 1.0/1.1 at its default security level even when asked for them.
    ciphers: 'DEFAULT@SECLEVEL=0'
  })
  const forwarder = await startInterceptedPath(t, origin.port, { trustedDestinationCa: ca.cert })

  const res = await forwarder.request('/')
  t.equal(res.statusCode, 502)
  t.match(String(res.headers['proxy-status']), /^fastify-forward-proxy; error=tls_protocol_error; details="ERR_SSL_[A-Z0-9_]+"$/)
  await res.body.dump()
  t.equal(origin.requests.length, 0)
})

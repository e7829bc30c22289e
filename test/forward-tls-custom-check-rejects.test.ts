import { test } from 'tap'
import { certificateDirectory, makeCa, issueLeaf } from './helpers/destination-certificates'
import { startHttpsOrigin, startInterceptedPath } from './helpers/https-destination'

test('checkDestinationCertificate returning false refuses an otherwise valid certificate with 502 tls_certificate_error; a check that throws gets 500 proxy_internal_error', async (t) => {
  const dir = certificateDirectory(t)
  const ca = await makeCa(dir, 'ca')
  const leaf = await issueLeaf(dir, 'leaf', ca)
  const origin = await startHttpsOrigin(t, { cert: leaf.cert, key: leaf.key })

  const errors: unknown[] = []
  const refusing = await startInterceptedPath(t, origin.port, {
    trustedDestinationCa: ca.cert,
    checkDestinationCertificate (_certificate, error) { errors.push(error); return false }
  })
  const refused = await refusing.request('/')
  t.equal(refused.statusCode, 502)
  t.equal(refused.headers['proxy-status'], 'fastify-forward-proxy; error=tls_certificate_error; details="rejected by the certificate check"')
  await refused.body.dump()
  t.same(errors, [null], 'the default check found nothing wrong')

  const throwing = await startInterceptedPath(t, origin.port, {
    trustedDestinationCa: ca.cert,
    checkDestinationCertificate () { throw new Error('secret-token-in-check') }
  })
  const failed = await throwing.request('/')
  t.equal(failed.statusCode, 500)
  t.equal(failed.headers['proxy-status'], 'fastify-forward-proxy; error=proxy_internal_error')
  t.notMatch(await failed.body.text(), /secret-token/)
  t.equal(origin.requests.length, 0)
})

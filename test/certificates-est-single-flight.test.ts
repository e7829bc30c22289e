import { test } from 'tap'
import { createEstCertificateProvider } from '../lib/index'
import { startOpensslEstResponder } from './helpers/openssl-est-responder'

test('EST single-flight: 50 concurrent getCertificate calls for one new host make one enrollment and share its leaf', async (t) => {
  const responder = await startOpensslEstResponder(t)
  const provider = createEstCertificateProvider({ url: responder.url, ca: responder.ca.cert })
  t.teardown(() => provider.close())
  const contexts = await Promise.all(Array.from({ length: 50 }, async () => await provider.getCertificate({ host: 'burst.example', port: 443 }, AbortSignal.timeout(10_000))))
  t.equal(responder.enrollments, 1, 'one /simpleenroll request')
  t.equal(new Set(contexts).size, 1, 'one secure context for every caller')
  t.equal(provider.cacheSize, 1)
  await provider.getCertificate({ host: 'burst.example', port: 8443 }, AbortSignal.timeout(1000))
  t.equal(responder.enrollments, 1, 'another port of the host reuses the leaf')
})

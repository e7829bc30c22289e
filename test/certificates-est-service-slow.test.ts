import { test } from 'tap'
import { createEstCertificateProvider } from '../lib/index'
import { startOpensslEstResponder } from './helpers/openssl-est-responder'

test('EST service slow: an answer that does not come within the timeout fails the enrollment with est_timeout, at the timeout', async (t) => {
  const responder = await startOpensslEstResponder(t, { delayMs: 30_000 })
  const provider = createEstCertificateProvider({ url: responder.url, ca: responder.ca.cert, timeout: 1000 })
  t.teardown(() => provider.close())
  const started = Date.now()
  await t.rejects(provider.getCertificate({ host: 'slow.example', port: 443 }, AbortSignal.timeout(10_000)), { name: 'ForwardProxyEstError', reason: 'est_timeout' })
  const elapsed = Date.now() - started
  t.ok(elapsed >= 900 && elapsed < 2500, `failed at the timeout (${elapsed} ms)`)
  t.equal(provider.cacheSize, 0)

  // The caller's own signal (the handshake timeout) ends its wait sooner.
  const caller = Date.now()
  const provider2 = createEstCertificateProvider({ url: responder.url, ca: responder.ca.cert, timeout: 20_000 })
  t.teardown(() => provider2.close())
  await t.rejects(provider2.getCertificate({ host: 'slow.example', port: 443 }, AbortSignal.timeout(300)))
  t.ok(Date.now() - caller < 1500, 'the handshake is not held past its own timeout')
})

import { X509Certificate } from 'node:crypto'
import { test } from 'tap'
import { createEstCertificateProvider } from '../lib/index'
import { startOpensslEstResponder } from './helpers/openssl-est-responder'

test('EST 202 + Retry-After (RFC 7030 4.2.3): the provider waits the time asked, repeats the request, and the handshake gets the leaf', async (t) => {
  const responder = await startOpensslEstResponder(t, { pending: 2, retryAfter: '1' })
  const provider = createEstCertificateProvider({ url: responder.url, ca: responder.ca.cert, timeout: 8000 })
  t.teardown(() => provider.close())
  const started = Date.now()
  const leaf = await provider.getLeaf('pending.example')
  const elapsed = Date.now() - started
  t.equal(responder.enrollments, 3, 'two 202 answers, then the certificate')
  t.ok(elapsed >= 2000, `waited both Retry-After periods (${elapsed} ms)`)
  t.equal(new X509Certificate(leaf.cert).subjectAltName, 'DNS:pending.example')
})

test('EST 202 with a Retry-After past the timeout fails at once with the status, not at the deadline', async (t) => {
  const responder = await startOpensslEstResponder(t, { pending: 1, retryAfter: '60' })
  const provider = createEstCertificateProvider({ url: responder.url, ca: responder.ca.cert, timeout: 5000 })
  t.teardown(() => provider.close())
  const started = Date.now()
  await t.rejects(provider.getLeaf('later.example'), { name: 'ForwardProxyEstError', reason: 'est_timeout', estStatus: 202, message: /Retry-After 60 s/ })
  t.ok(Date.now() - started < 2000, 'no wait for a retry that could not finish in time')
  t.equal(provider.cacheSize, 0, 'nothing cached: the next handshake tries again')
})

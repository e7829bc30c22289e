import { test } from 'tap'
import { createEstCertificateProvider } from '../lib/index'
import { startOpensslEstResponder } from './helpers/openssl-est-responder'

test('an EST answer larger than maxResponseBytes is est_bad_response (the server was reached and answered), naming the limit', async (t) => {
  const responder = await startOpensslEstResponder(t, { answerBytes: 8192 })
  const provider = createEstCertificateProvider({ url: responder.url, ca: responder.ca.cert, maxResponseBytes: 4096 })
  t.teardown(() => provider.close())
  await t.rejects(provider.getLeaf('api.example.com'), {
    name: 'ForwardProxyEstError',
    reason: 'est_bad_response',
    code: 'FFP_ERR_EST_BAD_RESPONSE',
    message: /simpleenroll at https:\/\/127\.0\.0\.1:\d+\/\.well-known\/est: the answer is larger than maxResponseBytes \(4096 bytes\)/
  })
  t.equal(responder.enrollments, 1, 'the server was reached')
})

import { test } from 'tap'
import { createEstCertificateProvider } from '../lib/index'
import { startOpensslEstResponder } from './helpers/openssl-est-responder'

test('EST wrong-name leaf: a responder issuing for another name is refused; nothing is cached, no fallback', async (t) => {
  const responder = await startOpensslEstResponder(t, { issueForName: 'attacker.example' })
  const issued: string[] = []
  const provider = createEstCertificateProvider({ url: responder.url, ca: responder.ca.cert, onLeafIssued: (leaf) => issued.push(leaf.host) })
  t.teardown(() => provider.close())
  await t.rejects(provider.getCertificate({ host: 'bank.example', port: 443 }, AbortSignal.timeout(5000)), {
    name: 'ForwardProxyEstError', reason: 'est_untrusted_leaf', message: /does not name the host.*DNS:attacker\.example/
  })
  t.equal(responder.issued, 1, 'the responder did issue a certificate')
  t.same(issued, [], 'it was never handed out')
  t.equal(provider.cacheSize, 0, 'nothing cached: the next handshake enrolls again')
})

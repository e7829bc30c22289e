import { test } from 'tap'
import { createEstCertificateProvider } from '../lib/index'
import { fixtureDirectory, makeCa } from './helpers/ca-fixtures'
import { startOpensslEstResponder } from './helpers/openssl-est-responder'

test('EST untrusted leaf: a leaf signed by a CA other than the /cacerts ones is refused, even after /cacerts is read again', async (t) => {
  const rogue = await makeCa(fixtureDirectory(t), { name: 'Rogue CA' })
  const responder = await startOpensslEstResponder(t, { rogueSigner: rogue })
  const provider = createEstCertificateProvider({ url: responder.url, ca: responder.ca.cert })
  t.teardown(() => provider.close())
  await t.rejects(provider.getLeaf('bank.example'), {
    name: 'ForwardProxyEstError', reason: 'est_untrusted_leaf', message: /issuer CN=Rogue CA\) does not chain to the EST server's \/cacerts certificates/
  })
  t.equal(provider.cacheSize, 0)
})

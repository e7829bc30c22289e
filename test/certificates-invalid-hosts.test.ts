import { test } from 'tap'
import { createCaCertificateProvider } from '../lib/index'
import { fixtureDirectory, makeCa } from './helpers/ca-fixtures'

// Leaves are never wildcards; hosts arrive canonical, anything else is refused.
const REFUSED = ['*.example.com', '*', 'Example.com', 'bücher.example', '', 'a..example', '.example', 'example.com.', 'fe80::1%eth0', '[::1]', '2001:DB8::1', '2001:db8:0:0:0:0:0:1', 'a b.example', `${'a'.repeat(64)}.example`, `${'a.'.repeat(127)}com`, '1.2.3']

test('no leaf for a wildcard or a non-canonical host; the error says why', async (t) => {
  const ca = await makeCa(fixtureDirectory(t))
  let mints = 0
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key, onLeafIssued: () => { mints++ } })
  for (const host of REFUSED) {
    await t.rejects(provider.getCertificate({ host, port: 443 }, new AbortController().signal), { reason: 'invalid_host', message: /not a canonical host name or IP address/ }, JSON.stringify(host))
  }
  t.equal(mints, 0, 'nothing minted')
  t.equal(provider.cacheSize, 0, 'nothing cached')
})

test('hosts with underscores and long valid names get leaves', async (t) => {
  const ca = await makeCa(fixtureDirectory(t))
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key })
  const long = `${'a'.repeat(63)}.${'b'.repeat(63)}.example`
  t.equal((await provider.getLeaf('my_host.internal.example')).host, 'my_host.internal.example')
  t.equal((await provider.getLeaf(long)).host, long)
})

import { test } from 'tap'
import { createCaCertificateProvider } from '../lib/index'
import type { ForwardProxyIssuedLeaf } from '../types/certificates'
import { fixtureDirectory, makeCa } from './helpers/ca-fixtures'

test('200 simultaneous getCertificate calls for one new host mint exactly one leaf and share its secure context', async (t) => {
  const ca = await makeCa(fixtureDirectory(t))
  const minted: ForwardProxyIssuedLeaf[] = []
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key, onLeafIssued: (leaf) => minted.push(leaf) })
  const destination = { host: 'burst.example', port: 443 }
  const contexts = await Promise.all(Array.from({ length: 200 }, async (_, index) =>
    await provider.getCertificate({ ...destination, port: 443 + (index % 3) }, new AbortController().signal)))
  t.equal(minted.length, 1, 'one mint')
  t.equal(new Set(contexts).size, 1, 'one secure context for all 200, ports notwithstanding')
  t.equal(contexts[0], minted[0]?.secureContext, 'the minted leaf\'s context')
  await provider.getCertificate(destination, new AbortController().signal)
  t.equal(minted.length, 1, 'a later call is served from the cache')
})

test('an aborted caller stops waiting, the shared mint goes on for the others', async (t) => {
  const ca = await makeCa(fixtureDirectory(t))
  let mints = 0
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key, onLeafIssued: () => { mints++ } })
  const impatient = new AbortController()
  const first = provider.getLeaf('abort.example', impatient.signal)
  const second = provider.getLeaf('abort.example', new AbortController().signal)
  impatient.abort(new Error('handshake timed out'))
  await t.rejects(first, { message: 'handshake timed out' }, 'the aborted caller gets its signal\'s reason')
  const leaf = await second
  t.equal(leaf.host, 'abort.example', 'the other caller gets the leaf')
  t.equal(mints, 1, 'minted once')
  t.equal(await provider.getLeaf('abort.example'), leaf, 'and it is cached')
})

test('an already aborted signal rejects at once and takes no cache slot', async (t) => {
  const ca = await makeCa(fixtureDirectory(t))
  let mints = 0
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key, onLeafIssued: () => { mints++ } })
  await t.rejects(provider.getCertificate({ host: 'late.example', port: 443 }, AbortSignal.abort()))
  t.equal(provider.cacheSize, 0)
  t.equal(mints, 0)
})

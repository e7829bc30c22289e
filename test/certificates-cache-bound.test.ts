import { test } from 'tap'
import { createCaCertificateProvider } from '../lib/index'
import { fixtureDirectory, makeCa } from './helpers/ca-fixtures'

test('1,000 distinct hosts stay within the cache bound, least recently used dropped first', async (t) => {
  const ca = await makeCa(fixtureDirectory(t))
  let mints = 0
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key, cacheSize: 100, onLeafIssued: () => { mints++ } })
  let largest = 0
  for (let batch = 0; batch < 10; batch++) {
    await Promise.all(Array.from({ length: 100 }, async (_, index) => {
      await provider.getLeaf(`host-${batch * 100 + index}.example`)
      largest = Math.max(largest, provider.cacheSize)
    }))
    if (batch === 0) {
      await provider.getLeaf('host-0.example') // recently used: survives the next batch
    }
  }
  t.equal(mints, 1000, 'each host minted once')
  t.ok(largest <= 100, `never more than 100 held (largest ${largest})`)
  t.equal(provider.cacheSize, 100, '100 held at the end')
  await provider.getLeaf('host-999.example')
  t.equal(mints, 1000, 'a recent host is still cached')
  await provider.getLeaf('host-500.example')
  t.equal(mints, 1001, 'an old host was dropped and is minted again')
  provider.clear()
  t.equal(provider.cacheSize, 0, 'clear() empties the cache')
})

test('the default bound is 1,000 hosts', async (t) => {
  const ca = await makeCa(fixtureDirectory(t))
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key })
  for (let index = 0; index < 1001; index++) await provider.getLeaf(`h${index}.example`)
  t.equal(provider.cacheSize, 1000)
})

test('a refused host takes no cache slot', async (t) => {
  const ca = await makeCa(fixtureDirectory(t))
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key })
  await t.rejects(provider.getLeaf('*.example.com'), { reason: 'invalid_host', message: /no leaf certificate is issued for host/ })
  t.equal(provider.cacheSize, 0)
})

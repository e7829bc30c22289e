import { X509Certificate } from 'node:crypto'
import { test } from 'tap'
import { createCaCertificateProvider } from '../lib/index'
import type { ForwardProxyIssuedLeaf } from '../types/certificates'
import { eventually } from './helpers/eventually'
import { fixtureDirectory, makeCa } from './helpers/ca-fixtures'

const DAY = 86_400_000

test('leaves are renewed before expiry (clock injected, no sleeping)', async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { days: 60 })
  const start = Date.parse(new X509Certificate(ca.cert).validFrom) + DAY
  let now = start
  const minted: ForwardProxyIssuedLeaf[] = []
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key, now: () => now, onLeafIssued: (leaf) => minted.push(leaf) })

  const first = await provider.getLeaf('renew.example')
  now = start + 4 * DAY // 3 days of the 7 remain: more than a third
  t.equal(await provider.getLeaf('renew.example'), first, 'with more than a third of its validity left, the leaf is kept')
  t.equal(minted.length, 1)

  now = start + 5 * DAY // under a third left
  t.equal(await provider.getLeaf('renew.example'), first, 'due for renewal: the current leaf is still served at once')
  await eventually(() => minted.length === 2)
  const second = minted[1]
  t.ok(second !== undefined && second.notAfter.getTime() > first.notAfter.getTime(), 'a new leaf was minted in the background')
  t.equal(await provider.getLeaf('renew.example'), second, 'and is served from then on')
  t.equal(minted.length, 2, 'renewal ran once')

  now = second!.notAfter.getTime() + 1000 // expired: never served
  const third = await provider.getLeaf('renew.example')
  t.not(third, second, 'an expired leaf is replaced before the caller gets one')
  t.ok(third.notAfter.getTime() > now, 'with one valid now')
  t.equal(minted.length, 3)
})

test('concurrent requests during a renewal trigger one mint', async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { days: 60 })
  let now = Date.parse(new X509Certificate(ca.cert).validFrom) + DAY
  let mints = 0
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key, now: () => now, onLeafIssued: () => { mints++ } })
  await provider.getLeaf('renew.example')
  now += 6 * DAY
  await Promise.all(Array.from({ length: 50 }, async () => await provider.getLeaf('renew.example')))
  await eventually(() => mints === 2)
  t.equal(mints, 2, 'one background renewal for 50 requests')
})

test('a leaf cut short by the CA\'s end is not re-minted early (a new one could not last longer)', async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { days: 2 })
  let now = Date.parse(new X509Certificate(ca.cert).validFrom) + 60_000
  let mints = 0
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key, now: () => now, onLeafIssued: () => { mints++ } })
  const leaf = await provider.getLeaf('short.example')
  now = leaf.notAfter.getTime() - 60_000
  t.equal(await provider.getLeaf('short.example'), leaf)
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(mints, 1, 'no re-mint before it ends')
})

test('a failed background renewal keeps the current leaf and is reported', async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { days: 60 })
  let now = Date.parse(new X509Certificate(ca.cert).validFrom) + DAY
  const failures: Array<[string, Error]> = []
  const scripted: number[] = [] // clock readings to hand out before falling back to `now`
  const provider = createCaCertificateProvider({
    cert: ca.cert,
    key: ca.key,
    now: () => scripted.shift() ?? now,
    onRenewalError: (host, error) => failures.push([host, error])
  })
  const leaf = await provider.getLeaf('flaky.example')
  now += 6 * DAY
  // The cache reads the clock (renewal due), then the background mint does: a CA long expired.
  scripted.push(now, Number.MAX_SAFE_INTEGER)
  const served = provider.getLeaf('flaky.example')
  t.equal(await served, leaf, 'the current leaf is served')
  await eventually(() => failures.length === 1)
  t.equal(failures[0]?.[0], 'flaky.example', 'the failure is reported with the host')
  t.match(failures[0]?.[1].message ?? '', /expired/)
  t.equal(await provider.getLeaf('flaky.example'), leaf, 'still served while valid')
})

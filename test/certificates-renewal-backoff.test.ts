import { X509Certificate } from 'node:crypto'
import { test } from 'tap'
import { createCaCertificateProvider } from '../lib/index'
import { LeafCache, RENEWAL_RETRY_BASE_MS, RENEWAL_RETRY_MAX_MS, type CachedLeaf } from './helpers/internals'
import { fixtureDirectory, makeCa } from './helpers/ca-fixtures'
import { eventually } from './helpers/eventually'

const DAY = 86_400_000

test('failed background renewals back off (1 s doubling, capped at 5 min) instead of asking the CA again on every handshake; a success resets it', async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { days: 60 })
  let now = Date.parse(new X509Certificate(ca.cert).validFrom) + DAY
  // Real leaves from a real CA provider; `failing` makes the next mints fail as a CA or EST outage would.
  const real = createCaCertificateProvider({ cert: ca.cert, key: ca.key, now: () => now })
  let failing = false
  let attempts = 0
  const renewalErrors: string[] = []
  const cache = new LeafCache({
    maxEntries: 10,
    now: () => now,
    mint: async (host): Promise<CachedLeaf> => {
      attempts++
      if (failing) throw new Error('EST service unreachable')
      real.clear()
      const leaf = await real.getLeaf(host)
      return { leaf, renewAt: leaf.notBefore.getTime() + Math.floor((leaf.notAfter.getTime() - leaf.notBefore.getTime()) * 2 / 3) }
    },
    onRenewalError: (_host, error) => renewalErrors.push(error.message)
  })
  const settle = async (): Promise<void> => { for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve)) }

  const first = await cache.get('api.example')
  t.equal(attempts, 1)
  failing = true
  now += 6 * DAY // due for renewal, still valid
  const waits: number[] = []
  for (let round = 1; round <= 12; round++) {
    const before = attempts
    // A burst of handshakes while the renewal fails: each is served the current leaf at once.
    const served = await Promise.all(Array.from({ length: 20 }, async () => await cache.get('api.example')))
    t.ok(served.every((leaf) => leaf === first), `round ${round}: the current leaf is served to every handshake`)
    await settle()
    t.equal(attempts, before + 1, `round ${round}: one renewal attempt for 20 handshakes`)
    const expected = Math.min(RENEWAL_RETRY_BASE_MS * 2 ** (round - 1), RENEWAL_RETRY_MAX_MS)
    now += expected - 1
    await cache.get('api.example')
    await settle()
    t.equal(attempts, before + 1, `round ${round}: no attempt before the ${expected} ms backoff ends`)
    now += 1
    waits.push(expected)
  }
  t.equal(waits.at(-1), RENEWAL_RETRY_MAX_MS, 'the wait is capped at 5 minutes')
  t.equal(renewalErrors.length, 12, 'every failed renewal is reported')

  failing = false
  await cache.get('api.example')
  await eventually(async () => (await cache.get('api.example')) !== first)
  const renewed = await cache.get('api.example')
  t.not(renewed, first, 'the next attempt after the backoff renewed the leaf')
  const attemptsAfterRenewal = attempts
  now = renewed.notAfter.getTime() - 60_000 // the new leaf is due for renewal in turn
  failing = true
  await cache.get('api.example')
  await settle()
  now += RENEWAL_RETRY_BASE_MS
  await cache.get('api.example')
  await settle()
  t.equal(attempts, attemptsAfterRenewal + 2, 'after a success the backoff starts again from 1 s')
})

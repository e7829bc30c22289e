import { X509Certificate } from 'node:crypto'
import { test } from 'tap'
import { createCaCertificateProvider } from '../lib/index'
import { fixtureDirectory, makeCa } from './helpers/ca-fixtures'

const DAY = 86_400_000
const FIVE_MINUTES = 5 * 60_000

function caValidity (pem: string): { notBefore: number, notAfter: number } {
  const ca = new X509Certificate(pem)
  return { notBefore: Date.parse(ca.validFrom), notAfter: Date.parse(ca.validTo) }
}

test('a leaf never outlives its CA: a CA expiring in 2 days gives leaves ending at its notAfter', async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { days: 2 })
  const { notAfter } = caValidity(ca.cert)
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key })
  const leaf = await provider.getLeaf('short.example')
  t.equal(leaf.notAfter.getTime(), notAfter, 'leaf notAfter = CA notAfter')
  t.equal(Date.parse(new X509Certificate(leaf.cert).validTo), notAfter, 'as encoded in the certificate')
})

test('validity starts 5 minutes back, but never before the CA\'s own start', async (t) => {
  const ca = await makeCa(fixtureDirectory(t))
  const { notBefore } = caValidity(ca.cert)
  const fresh = createCaCertificateProvider({ cert: ca.cert, key: ca.key, now: () => notBefore + 1000 })
  t.equal((await fresh.getLeaf('a.example')).notBefore.getTime(), notBefore, 'a CA made a second ago: the leaf starts with it')
  const later = createCaCertificateProvider({ cert: ca.cert, key: ca.key, now: () => notBefore + DAY })
  t.equal((await later.getLeaf('a.example')).notBefore.getTime(), notBefore + DAY - FIVE_MINUTES, 'a day later: 5 minutes back')
})

test('validityDays sets the lifetime', async (t) => {
  const ca = await makeCa(fixtureDirectory(t))
  const now = caValidity(ca.cert).notBefore + DAY
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key, validityDays: 1, now: () => now })
  const leaf = await provider.getLeaf('a.example')
  t.equal(leaf.notAfter.getTime() - leaf.notBefore.getTime(), DAY + FIVE_MINUTES)
})

test('once the CA has expired no leaf is minted (fail closed)', async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { days: 1 })
  let now = Date.now()
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key, now: () => now })
  now += 2 * DAY
  await t.rejects(provider.getLeaf('a.example'), { reason: 'mint_failed', message: /CA certificate expired/ })
  t.equal(provider.cacheSize, 0, 'nothing cached')
})

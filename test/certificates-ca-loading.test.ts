import { X509Certificate } from 'node:crypto'
import { inspect } from 'node:util'
import { test } from 'tap'
import { createCaCertificateProvider, ForwardProxyCertificateError } from '../lib/index'
import type { ForwardProxyCaProviderOptions } from '../types/certificates'
import { CA_EXTENSIONS, FIXTURE_PASSPHRASE, fixtureDirectory, makeCa, type CaKeyKind } from './helpers/ca-fixtures'

function creationError (options: ForwardProxyCaProviderOptions): ForwardProxyCertificateError {
  try {
    createCaCertificateProvider(options)
  } catch (error) {
    if (error instanceof ForwardProxyCertificateError) return error
    throw error
  }
  throw new Error('the provider was created')
}

/** Every way the error could reach a log: message, stack, util.inspect, JSON. */
function everythingShown (error: Error): string {
  return [error.message, error.stack, inspect(error, { depth: 5 }), JSON.stringify(error)].join('\n')
}

/** The base64 lines of a PEM key: none of them may show anywhere. */
function keyLines (pem: string): string[] {
  return pem.split('\n').filter((line) => line.length > 16 && !line.startsWith('-----'))
}

const KEY_KINDS: CaKeyKind[] = ['ec-p256-sec1', 'ec-p256-pkcs8', 'ec-p384-pkcs8-encrypted', 'rsa-pkcs1']

for (const keyKind of KEY_KINDS) {
  test(`CA loading: a ${keyKind} key is read and signs leaves`, async (t) => {
    const ca = await makeCa(fixtureDirectory(t), { keyKind })
    const provider = createCaCertificateProvider({ cert: Buffer.from(ca.cert), key: Buffer.from(ca.key), passphrase: ca.passphrase })
    const leaf = await provider.getLeaf('example.com')
    t.match(leaf.cert, /^-----BEGIN CERTIFICATE-----/)
  })
}

test('CA loading: a certificate that is not a CA (basicConstraints CA:FALSE) is refused', async (t) => {
  const notCa = await makeCa(fixtureDirectory(t), { name: 'leaf.example', extensions: ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature'] })
  const error = creationError({ cert: notCa.cert, key: notCa.key })
  t.equal(error.reason, 'bad_ca_certificate')
  t.match(error.message, /not a CA: it lacks basicConstraints with cA true/)
})

test('CA loading: a certificate without basicConstraints is refused', async (t) => {
  const notCa = await makeCa(fixtureDirectory(t), { name: 'plain', extensions: ['basicConstraints=CA:FALSE'] })
  t.equal(creationError({ cert: notCa.cert, key: notCa.key }).reason, 'bad_ca_certificate')
})

test('CA loading: a CA whose keyUsage lacks keyCertSign is refused', async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { extensions: ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,digitalSignature,cRLSign'] })
  const error = creationError({ cert: ca.cert, key: ca.key })
  t.equal(error.reason, 'bad_ca_certificate')
  t.match(error.message, /keyCertSign/)
})

test('CA loading: a CA whose nameConstraints cannot be read is refused, since no leaf could be checked against them', async (t) => {
  // A nameConstraints SEQUENCE whose permittedSubtrees hold a truncated element.
  const ca = await makeCa(fixtureDirectory(t), { extensions: [...CA_EXTENSIONS, '2.5.29.30=critical,DER:30:03:A0:01:30'] })
  const error = creationError({ cert: ca.cert, key: ca.key })
  t.equal(error.reason, 'bad_ca_certificate')
  t.match(error.message, /the nameConstraints of the CA certificate could not be read/)
})

test('CA loading: a CA valid past 2049 (its notAfter a GeneralizedTime) is read to the second', async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { days: 30 * 365 })
  const caNotAfter = Date.parse(new X509Certificate(ca.cert).validTo)
  t.ok(caNotAfter >= Date.UTC(2050, 0, 1), 'the fixture ends after 2049, so its notAfter is a GeneralizedTime')
  // Two days before the CA's end, a 7-day leaf ends with the CA: its end as read from its DER.
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key, validityDays: 7, now: () => caNotAfter - 2 * 24 * 3600 * 1000 })
  const leaf = await provider.getLeaf('example.com')
  t.equal(leaf.notAfter.getTime(), caNotAfter)
})

test('CA loading: a key that is not the CA certificate\'s is refused, without showing either key', async (t) => {
  const directory = fixtureDirectory(t)
  const ca = await makeCa(directory, { name: 'One CA' })
  const other = await makeCa(directory, { name: 'Other CA' })
  const error = creationError({ cert: ca.cert, key: other.key })
  t.equal(error.reason, 'key_mismatch')
  t.match(error.message, /does not belong to the CA certificate \(CN=One CA\)/)
  const shown = everythingShown(error)
  for (const line of [...keyLines(other.key), ...keyLines(ca.key)]) t.notOk(shown.includes(line), 'no key line shown')
})

test('CA loading: an RSA key with an EC certificate is refused as a mismatch', async (t) => {
  const directory = fixtureDirectory(t)
  const ca = await makeCa(directory, { name: 'EC CA' })
  const rsa = await makeCa(directory, { name: 'RSA CA', keyKind: 'rsa-pkcs1' })
  t.equal(creationError({ cert: ca.cert, key: rsa.key }).reason, 'key_mismatch')
})

test('CA loading: an encrypted key without its passphrase, or with a wrong one, is refused; neither passphrase nor key is shown', async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { keyKind: 'ec-p384-pkcs8-encrypted' })
  const missing = creationError({ cert: ca.cert, key: ca.key })
  t.equal(missing.reason, 'bad_ca_key')
  t.match(missing.message, /encrypted: give its passphrase/)
  const wrongPassphrase = 'not-the-passphrase-77a1'
  const wrong = creationError({ cert: ca.cert, key: ca.key, passphrase: wrongPassphrase })
  t.equal(wrong.reason, 'bad_ca_key')
  t.match(wrong.message, /could not be decrypted with the passphrase given/)
  for (const error of [missing, wrong]) {
    const shown = everythingShown(error)
    t.notOk(shown.includes(wrongPassphrase), 'the given passphrase is not shown')
    t.notOk(shown.includes(FIXTURE_PASSPHRASE), 'the real passphrase is not shown')
    for (const line of keyLines(ca.key)) t.notOk(shown.includes(line), 'no line of the encrypted key shown')
    t.equal(error.cause, undefined, 'no OpenSSL error carried along as cause')
  }
})

test('CA loading: a key that is not PEM, and a certificate that is not PEM, are refused', async (t) => {
  const ca = await makeCa(fixtureDirectory(t))
  const garbageKey = '-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5IGF0IGFsbCwganVzdCB0ZXh0IHRoYXQgbG9va3MgbGlrZSBvbmU=\n-----END PRIVATE KEY-----\n'
  const badKey = creationError({ cert: ca.cert, key: garbageKey })
  t.equal(badKey.reason, 'bad_ca_key')
  t.notOk(everythingShown(badKey).includes('bm90IGEga2V5'), 'the bad key text is not echoed')
  t.equal(creationError({ cert: ca.cert, key: 'secret-but-not-pem' }).reason, 'bad_ca_key')
  t.notOk(everythingShown(creationError({ cert: ca.cert, key: 'secret-but-not-pem' })).includes('secret-but-not-pem'))
  t.equal(creationError({ cert: 'not a certificate', key: ca.key }).reason, 'bad_ca_certificate')
  t.equal(creationError({ cert: ca.key, key: ca.key }).reason, 'bad_ca_certificate', 'a key given as the certificate')
})

test('CA loading: an expired CA is refused', async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { days: 1 })
  const error = creationError({ cert: ca.cert, key: ca.key, now: () => Date.now() + 2 * 86_400_000 })
  t.equal(error.reason, 'bad_ca_certificate')
  t.match(error.message, /expired on/)
})

test('CA loading: further certificates must each issue the one before', async (t) => {
  const directory = fixtureDirectory(t)
  const root = await makeCa(directory, { name: 'Root CA' })
  const intermediate = await makeCa(directory, { name: 'Intermediate CA', issuer: root })
  const unrelated = await makeCa(directory, { name: 'Unrelated CA' })
  const provider = createCaCertificateProvider({ cert: intermediate.cert + root.cert, key: intermediate.key })
  t.equal((await provider.getLeaf('example.com')).chain, intermediate.cert.trim() + '\n' + root.cert.trim() + '\n', 'the chain sent: intermediate then root')
  const error = creationError({ cert: intermediate.cert + unrelated.cert, key: intermediate.key })
  t.equal(error.reason, 'bad_ca_certificate')
  t.match(error.message, /certificate 2 of "cert" is not the CA that issued certificate 1/)
})

test('CA loading: an RSA CA key shorter than 2048 bits is refused', { skip: process.env.FFP_SKIP_SLOW === '1' }, async (t) => {
  const directory = fixtureDirectory(t)
  const ca = await makeCa(directory, { keyKind: 'rsa-pkcs1', extensions: CA_EXTENSIONS })
  // Same checks with a 1024-bit key made here: its certificate must match it, so make both.
  const { execFileSync } = await import('node:child_process')
  const keyPath = `${directory}/short.key`
  const certPath = `${directory}/short.pem`
  execFileSync('openssl', ['genrsa', '-out', keyPath, '1024'], { stdio: 'ignore' })
  execFileSync('openssl', ['req', '-x509', '-new', '-key', keyPath, '-subj', '/CN=Short CA', '-days', '2', ...CA_EXTENSIONS.flatMap((e) => ['-addext', e]), '-out', certPath], { stdio: 'ignore' })
  const { readFileSync } = await import('node:fs')
  const error = creationError({ cert: readFileSync(certPath), key: readFileSync(keyPath) })
  t.equal(error.reason, 'bad_ca_key')
  t.match(error.message, /shorter than 2048 bits/)
  t.ok(createCaCertificateProvider({ cert: ca.cert, key: ca.key }), 'a 2048-bit one is fine')
})

test('options: bad options are refused naming the option', async (t) => {
  const ca = await makeCa(fixtureDirectory(t))
  const base = { cert: ca.cert, key: ca.key }
  const cases: Array<[string, Record<string, unknown>]> = [
    ['keyType', { keyType: 'dsa' }],
    ['validityDays', { validityDays: 0 }],
    ['validityDays', { validityDays: 398 }],
    ['cacheSize', { cacheSize: 1.5 }],
    ['cacheSize', { cacheSize: 0 }],
    ['keyPoolSize', { keyPoolSize: -1 }],
    ['now', { now: 5 }],
    ['passphrase', { passphrase: 42 }],
    ['cacheSzie', { cacheSzie: 10 }]
  ]
  for (const [option, extra] of cases) {
    const error = creationError({ ...base, ...extra } as unknown as ForwardProxyCaProviderOptions)
    t.equal(error.reason, 'invalid_option', `${option}: invalid_option`)
    t.match(error.message, `option "${option}"`, `${option}: named`)
  }
})

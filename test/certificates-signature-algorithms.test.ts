import { createPrivateKey, X509Certificate } from 'node:crypto'
import { test } from 'tap'
import { createCaCertificateProvider } from '../lib/index'
import { fixtureDirectory, makeCa, type CaKeyKind } from './helpers/ca-fixtures'
import { keyUsageNames, parseLeaf } from './helpers/leaf-inspection'

const CASES: Array<{ keyKind: CaKeyKind, oid: string, name: string }> = [
  { keyKind: 'ec-p256-sec1', oid: '1.2.840.10045.4.3.2', name: 'ecdsa-with-SHA256' },
  { keyKind: 'ec-p384-pkcs8-encrypted', oid: '1.2.840.10045.4.3.3', name: 'ecdsa-with-SHA384' },
  // A P-521 signature (two 66-byte integers) is longer than 127 bytes: DER's long length form.
  { keyKind: 'ec-p521-pkcs8', oid: '1.2.840.10045.4.3.4', name: 'ecdsa-with-SHA512' },
  { keyKind: 'rsa-pkcs1', oid: '1.2.840.113549.1.1.11', name: 'sha256WithRSAEncryption' }
]

for (const { keyKind, oid, name } of CASES) {
  test(`a ${keyKind} CA signs leaves with ${name}, which verify`, async (t) => {
    const ca = await makeCa(fixtureDirectory(t), { keyKind })
    const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key, passphrase: ca.passphrase })
    const leaf = parseLeaf((await provider.getLeaf('example.com')).cert)
    t.equal(leaf.pkijs.signatureAlgorithm.algorithmId, oid, `outer signature algorithm ${name}`)
    t.equal(leaf.pkijs.signature.algorithmId, oid, `TBS signature algorithm ${name}`)
    t.ok(leaf.x509.verify(new X509Certificate(ca.cert).publicKey), 'the CA\'s public key verifies the signature')
  })
}

test('keyType rsa-2048 gives RSA 2048 leaves with digitalSignature and keyEncipherment', async (t) => {
  const ca = await makeCa(fixtureDirectory(t))
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key, keyType: 'rsa-2048', keyPoolSize: 0 })
  const issued = await provider.getLeaf('rsa.example')
  const leaf = parseLeaf(issued.cert)
  const key = createPrivateKey(issued.key)
  t.equal(key.asymmetricKeyType, 'rsa', 'an RSA key')
  t.equal(key.asymmetricKeyDetails?.modulusLength, 2048, '2048 bits')
  t.ok(leaf.x509.checkPrivateKey(key), 'the key belongs to the leaf')
  t.same(keyUsageNames(leaf), ['digitalSignature', 'keyEncipherment'], 'keyUsage: digitalSignature and keyEncipherment')
  t.equal(leaf.extension('2.5.29.15')?.critical, true, 'keyUsage is critical')
  t.equal(leaf.pkijs.signatureAlgorithm.algorithmId, '1.2.840.10045.4.3.2', 'still signed by the P-256 CA with ecdsa-with-SHA256')
})

test('ECDSA P-256 leaves by default', async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { keyKind: 'rsa-pkcs1' })
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key })
  const key = createPrivateKey((await provider.getLeaf('example.com')).key)
  t.equal(key.asymmetricKeyType, 'ec')
  t.equal(key.asymmetricKeyDetails?.namedCurve, 'prime256v1')
})

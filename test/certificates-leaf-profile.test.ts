import { createHash, createPrivateKey, X509Certificate } from 'node:crypto'
import { test } from 'tap'
import { AuthorityKeyIdentifier, BasicConstraints, Certificate, ExtKeyUsage } from 'pkijs'
import { createCaCertificateProvider } from '../lib/index'
import { parseIP } from './helpers/internals'
import { fixtureDirectory, makeCa } from './helpers/ca-fixtures'
import { keyUsageNames, octets, parseLeaf, subjectAltNames } from './helpers/leaf-inspection'

// The leaf profile, one assertion per point, for each kind of host the proxy hands over.
const HOSTS: Array<{ host: string, kind: 'dns' | 'ip' }> = [
  { host: 'api.example.com', kind: 'dns' },
  { host: '192.0.2.10', kind: 'ip' },
  { host: '2001:db8::1', kind: 'ip' },
  { host: 'xn--bcher-kva.example', kind: 'dns' } // bücher.example, as canonicalHost gives it
]

const FIVE_MINUTES = 5 * 60_000
const SEVEN_DAYS = 7 * 86_400_000

test('every point of the leaf profile, for DNS, IPv4, IPv6 and IDN hosts', async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { name: 'Profile CA' })
  const caX509 = new X509Certificate(ca.cert)
  const caSki = octets(Certificate.fromBER(caX509.raw).extensions?.find((e) => e.extnID === '2.5.29.14')?.parsedValue)
  // One hour after the CA's start, on a whole second plus 250 ms, so the backdating is exact.
  const now = Math.floor(Date.now() / 1000) * 1000 + 3_600_000 + 250
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key, now: () => now })
  const serials = new Set<string>()

  for (const { host, kind } of HOSTS) {
    await t.test(host, async (t) => {
      const issued = await provider.getLeaf(host)
      const leaf = parseLeaf(issued.cert)

      t.equal(leaf.x509.subject, `CN=${host}`, 'subject: the only attribute is CN = host (Node)')
      t.equal(leaf.pkijs.subject.typesAndValues[0]?.value.valueBlock.value, host, 'subject CN = host (PKI.js)')

      const names = subjectAltNames(leaf)
      t.equal(names.length, 1, 'SAN: exactly one entry')
      if (kind === 'ip') {
        t.equal(names[0]?.type, 7, 'SAN: an iPAddress entry for an IP host')
        t.same(names[0]?.value, parseIP(host), `SAN: the address in its ${host.includes(':') ? 16 : 4}-byte form`)
        t.equal(leaf.x509.checkIP(host), host, 'Node accepts the leaf for the IP')
      } else {
        t.equal(names[0]?.type, 2, 'SAN: a dNSName entry for a name')
        t.equal(names[0]?.value, host, 'SAN: the dNSName is the host')
        t.equal(leaf.x509.checkHost(host, { wildcards: false }), host, 'Node accepts the leaf for the host')
      }
      t.equal(leaf.x509.checkHost(`other.${host}`), undefined, 'no other name is covered')
      t.notOk(issued.cert.includes('*') || names.some((name) => String(name.value).includes('*')), 'never a wildcard')

      const basic = leaf.extension('2.5.29.19')
      t.equal(leaf.x509.ca, false, 'not a CA (Node)')
      t.equal((basic?.parsedValue as BasicConstraints).cA, false, 'basicConstraints cA false (PKI.js)')
      t.equal(basic?.critical, true, 'basicConstraints is critical')

      t.same(keyUsageNames(leaf), ['digitalSignature'], 'keyUsage: digitalSignature only (ECDSA leaf)')
      t.equal(leaf.extension('2.5.29.15')?.critical, true, 'keyUsage is critical')

      t.same(leaf.x509.keyUsage, ['1.3.6.1.5.5.7.3.1'], 'extended key usage: serverAuth (Node)')
      t.same((leaf.extension('2.5.29.37')?.parsedValue as ExtKeyUsage).keyPurposes, ['1.3.6.1.5.5.7.3.1'], 'extended key usage: serverAuth (PKI.js)')

      const aki = leaf.extension('2.5.29.35')?.parsedValue as AuthorityKeyIdentifier
      t.same(octets(aki.keyIdentifier), caSki, 'authorityKeyIdentifier = the CA\'s subjectKeyIdentifier')
      t.equal(leaf.x509.issuer, caX509.subject, 'issuer = the CA\'s subject')

      const leafKeyBits = leaf.pkijs.subjectPublicKeyInfo.subjectPublicKey.valueBlock.valueHexView
      t.same(octets(leaf.extension('2.5.29.14')?.parsedValue), new Uint8Array(createHash('sha1').update(leafKeyBits).digest()), 'subjectKeyIdentifier: SHA-1 of the leaf key (RFC 5280 method 1)')

      const serial = Buffer.from(leaf.pkijs.serialNumber.valueBlock.valueHexView)
      t.equal(serial.length, 16, 'serial: 16 bytes')
      t.ok(serial[0] !== undefined && serial[0] > 0 && serial[0] < 0x80, 'serial: positive, non-zero leading byte (minimal DER)')
      t.equal(leaf.x509.serialNumber, issued.serialNumber, 'serial reported as upper-case hex')
      t.notOk(serials.has(issued.serialNumber), 'serial: not seen on an earlier leaf')
      serials.add(issued.serialNumber)

      t.equal(leaf.pkijs.notBefore.value.getTime(), now - 250 - FIVE_MINUTES, 'validity starts 5 minutes before minting')
      t.equal(leaf.pkijs.notAfter.value.getTime(), now - 250 + SEVEN_DAYS, 'validity lasts 7 days by default')
      t.ok(leaf.pkijs.notAfter.value <= Certificate.fromBER(caX509.raw).notAfter.value, 'validity ends within the CA\'s')

      t.equal(leaf.pkijs.signatureAlgorithm.algorithmId, '1.2.840.10045.4.3.2', 'signed ecdsa-with-SHA256 (P-256 CA)')
      t.ok(leaf.x509.verify(caX509.publicKey), 'signature verifies with the CA\'s public key')
      t.ok(leaf.x509.checkIssued(caX509), 'issued by the CA (Node)')

      const key = createPrivateKey(issued.key)
      t.equal(key.asymmetricKeyType, 'ec', 'leaf key: EC')
      t.equal(key.asymmetricKeyDetails?.namedCurve, 'prime256v1', 'leaf key: P-256')
      t.ok(leaf.x509.checkPrivateKey(key), 'the private key belongs to the leaf')
      t.match(issued.key, /^-----BEGIN PRIVATE KEY-----/, 'leaf key as unencrypted PKCS#8 PEM, usable by tls')
      t.equal(issued.chain, ca.cert.trim() + '\n', 'chain: the issuing CA')
    })
  }
})

test('a host longer than a common name may be (over 64 characters) gets a leaf with an empty subject and a critical subjectAltName naming it (RFC 5280), which Node accepts for the host', async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { name: 'Profile CA' })
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key })
  const long = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.example`
  const leaf = parseLeaf((await provider.getLeaf(long)).cert)
  t.equal(leaf.x509.subject ?? '', '', 'no common name')
  t.equal(leaf.pkijs.subject.typesAndValues.length, 0, 'an empty subject (PKI.js)')
  t.equal(leaf.extension('2.5.29.17')?.critical, true, 'subjectAltName is critical')
  t.same(subjectAltNames(leaf).map((name) => name.value), [long], 'and names the host')
  t.equal(leaf.x509.checkHost(long, { wildcards: false }), long, 'Node accepts the leaf for the host')
  t.ok(leaf.x509.checkIssued(new X509Certificate(ca.cert)), 'issued by the CA')
  const short = parseLeaf((await provider.getLeaf(`${'d'.repeat(56)}.example`)).cert)
  t.equal(short.x509.subject, `CN=${'d'.repeat(56)}.example`, '64 characters still fit a common name')
  t.equal(short.extension('2.5.29.17')?.critical, false, 'with a non-critical subjectAltName')
})

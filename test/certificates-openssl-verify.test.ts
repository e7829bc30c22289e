import { createHash } from 'node:crypto'
import { test } from 'tap'
import type { AuthorityKeyIdentifier } from 'pkijs'
import { createCaCertificateProvider } from '../lib/index'
import { fixtureDirectory, makeCa, opensslVerify, writeFixture } from './helpers/ca-fixtures'
import { octets, parseLeaf } from './helpers/leaf-inspection'

const HOSTS = ['api.example.com', '192.0.2.10', '2001:db8::1', 'xn--bcher-kva.example']

test('openssl verify -x509_strict -purpose sslserver accepts leaves for each host kind, with the host checked', async (t) => {
  const directory = fixtureDirectory(t)
  const ca = await makeCa(directory, { name: 'Verify CA' })
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key })
  for (const host of HOSTS) {
    const leafPath = writeFixture(directory, `leaf-${host.replace(/:/g, '_')}.pem`, (await provider.getLeaf(host)).cert)
    const check = host.includes(':') || /^[0-9.]+$/.test(host) ? ['-verify_ip', host] : ['-verify_hostname', host]
    const output = await opensslVerify(['-x509_strict', '-purpose', 'sslserver', ...check, '-CAfile', ca.certPath, leafPath])
    t.match(output, /: OK/, `${host}: OK`)
    await t.rejects(opensslVerify(['-CAfile', ca.certPath, '-verify_hostname', 'other.example', leafPath]), `${host}: refused for another name`)
  }
})

test('leaves of an intermediate CA verify against the root alone with the chain the provider sends', async (t) => {
  const directory = fixtureDirectory(t)
  const root = await makeCa(directory, { name: 'Root CA', keyKind: 'rsa-pkcs1' })
  const intermediate = await makeCa(directory, { name: 'Intermediate CA', issuer: root })
  const provider = createCaCertificateProvider({ cert: intermediate.cert, key: intermediate.key })
  const leaf = await provider.getLeaf('example.com')
  const leafPath = writeFixture(directory, 'leaf.pem', leaf.cert)
  const chainPath = writeFixture(directory, 'chain.pem', leaf.chain)
  t.match(await opensslVerify(['-x509_strict', '-CAfile', root.certPath, '-untrusted', chainPath, leafPath]), /: OK/)
  await t.rejects(opensslVerify(['-CAfile', root.certPath, leafPath]), 'without the chain the root alone is not enough')
})

test('a CA without a subjectKeyIdentifier gets the computed one as authorityKeyIdentifier, and openssl accepts it', async (t) => {
  const directory = fixtureDirectory(t)
  const ca = await makeCa(directory, {
    name: 'No SKI CA',
    extensions: ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign', 'subjectKeyIdentifier=none', 'authorityKeyIdentifier=none']
  })
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key })
  const issued = await provider.getLeaf('example.com')
  const caKeyBits = parseLeaf(ca.cert).pkijs.subjectPublicKeyInfo.subjectPublicKey.valueBlock.valueHexView
  const aki = parseLeaf(issued.cert).extension('2.5.29.35')?.parsedValue as AuthorityKeyIdentifier
  t.same(octets(aki.keyIdentifier), new Uint8Array(createHash('sha1').update(caKeyBits).digest()), 'AKI: SHA-1 of the CA key (RFC 5280 method 1)')
  const leafPath = writeFixture(directory, 'leaf.pem', issued.cert)
  // Not -x509_strict: strict mode refuses such a CA itself (error 86, missing SKI), whatever the leaf.
  t.match(await opensslVerify(['-CAfile', ca.certPath, leafPath]), /: OK/)
})

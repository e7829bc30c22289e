import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { test } from 'tap'
import { createCaCertificateProvider } from '../lib/index'
import { CA_EXTENSIONS, fixtureDirectory, makeCa, opensslVerify, writeFixture, type CaFixture } from './helpers/ca-fixtures'

const run = promisify(execFile)
// Each case says what the CA allows; openssl must agree with every verdict.
const CASES = [
  {
    ca: 'DNS-constrained CA',
    constraints: 'nameConstraints=critical,permitted;DNS:example.com,permitted;DNS:.example.org,excluded;DNS:bad.example.com,excluded;IP:2001:db8::/ffff:ffff::',
    permitted: ['example.com', 'api.example.com', 'a.example.org', '2001:db9::1'],
    // 10.1.2.3: no IP constraint, but OpenSSL checks the leaf's CN "10.1.2.3" against the DNS ones.
    refused: ['example.org', 'notexample.com', 'example.com.evil.net', 'bad.example.com', 'x.bad.example.com', '2001:db8::1', '10.1.2.3']
  },
  {
    ca: 'IP-constrained CA',
    constraints: 'nameConstraints=critical,permitted;IP:10.0.0.0/255.0.0.0,excluded;IP:10.9.0.0/255.255.0.0',
    permitted: ['10.1.2.3', 'example.net'],
    refused: ['10.9.8.7', '192.0.2.1', '2001:db8::1']
  }
]

function isIp (host: string): boolean {
  return host.includes(':') || /^[0-9.]+$/.test(host)
}

/** Signs a leaf for `host` with the openssl CLI, bypassing the provider, to ask openssl what it thinks of it. */
async function opensslLeaf (directory: string, ca: CaFixture, host: string): Promise<string> {
  const slug = host.replace(/[^a-z0-9]+/g, '_')
  const key = join(directory, `${slug}.key`)
  const csr = join(directory, `${slug}.csr`)
  const ext = join(directory, `${slug}.ext`)
  const cert = join(directory, `${slug}.pem`)
  await run('openssl', ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', key])
  await run('openssl', ['req', '-new', '-key', key, '-subj', `/CN=${host}`, '-out', csr])
  writeFileSync(ext, `subjectAltName=${isIp(host) ? 'IP' : 'DNS'}:${host}\nextendedKeyUsage=serverAuth\n`)
  await run('openssl', ['x509', '-req', '-in', csr, '-CA', ca.certPath, '-CAkey', ca.keyPath, '-CAcreateserial', '-days', '1', '-extfile', ext, '-out', cert])
  return cert
}

for (const { ca: caName, constraints, permitted, refused } of CASES) {
  test(`${caName}: leaves for the hosts its nameConstraints permit, and openssl verify accepts each`, async (t) => {
    const directory = fixtureDirectory(t)
    const ca = await makeCa(directory, { name: caName, extensions: [...CA_EXTENSIONS, constraints] })
    const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key })
    for (const host of permitted) {
      const leafPath = writeFixture(directory, `ours-${host.replace(/[^a-z0-9]+/g, '_')}.pem`, (await provider.getLeaf(host)).cert)
      t.match(await opensslVerify(['-x509_strict', '-CAfile', ca.certPath, leafPath]), /: OK/, `${host}: minted and verified`)
    }
  })

  test(`${caName}: a host outside its nameConstraints is refused with name_not_permitted before it takes a cache slot, and openssl refuses such a leaf too`, async (t) => {
    const directory = fixtureDirectory(t)
    const ca = await makeCa(directory, { name: caName, extensions: [...CA_EXTENSIONS, constraints] })
    let mints = 0
    const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key, onLeafIssued: () => { mints++ } })
    for (const host of refused) {
      await t.rejects(provider.getCertificate({ host, port: 443 }, new AbortController().signal),
        { name: 'ForwardProxyCertificateError', reason: 'name_not_permitted', message: /: the CA's nameConstraints (permit only|exclude) / }, `${host}: refused`)
      await t.rejects(opensslVerify(['-CAfile', ca.certPath, await opensslLeaf(directory, ca, host)]), `${host}: openssl refuses a leaf for it as well`)
    }
    t.equal(mints, 0, 'nothing minted')
    t.equal(provider.cacheSize, 0, 'nothing cached')
  })
}

test('the refusal message names the subtrees, so an operator sees why', async (t) => {
  const directory = fixtureDirectory(t)
  const [dns, ip] = await Promise.all(CASES.map(async (kase) => await makeCa(directory, { name: kase.ca, extensions: [...CA_EXTENSIONS, kase.constraints] })))
  const dnsProvider = createCaCertificateProvider({ cert: dns?.cert ?? '', key: dns?.key ?? '' })
  const ipProvider = createCaCertificateProvider({ cert: ip?.cert ?? '', key: ip?.key ?? '' })
  await t.rejects(dnsProvider.getLeaf('www.example.net'), { message: /host www\.example\.net: the CA's nameConstraints permit only DNS:example\.com, DNS:\.example\.org$/ })
  await t.rejects(dnsProvider.getLeaf('2001:db8::1'), { message: /exclude IP:2001:db8:0:0:0:0:0:0\/32$/ })
  await t.rejects(dnsProvider.getLeaf('10.1.2.3'), { message: /permit only DNS:example\.com, DNS:\.example\.org \(OpenSSL checks an IPv4 leaf's common name as a DNS name\)$/ })
  await t.rejects(ipProvider.getLeaf('10.9.0.1'), { message: /exclude IP:10\.9\.0\.0\/16$/ })
  await t.rejects(ipProvider.getLeaf('2001:db8::1'), { message: /permit only IP:10\.0\.0\.0\/8$/ })
})

test('nameConstraints on a root listed after the issuing intermediate apply too; an unconstrained CA is unaffected', async (t) => {
  const directory = fixtureDirectory(t)
  const root = await makeCa(directory, { name: 'Constrained Root', extensions: [...CA_EXTENSIONS, 'nameConstraints=critical,permitted;DNS:example.com'] })
  const intermediate = await makeCa(directory, { name: 'Plain Intermediate', issuer: root })
  const chained = createCaCertificateProvider({ cert: intermediate.cert + root.cert, key: intermediate.key })
  t.equal((await chained.getLeaf('api.example.com')).host, 'api.example.com')
  await t.rejects(chained.getLeaf('example.net'), { name: 'ForwardProxyCertificateError', reason: 'name_not_permitted' })

  const unconstrained = await makeCa(directory, { name: 'Plain CA' })
  const provider = createCaCertificateProvider({ cert: unconstrained.cert, key: unconstrained.key })
  t.equal((await provider.getLeaf('example.net')).host, 'example.net')
})

import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { test } from 'tap'
import { TS_LOADER, childEnv } from './helpers/child-node'
import { CA_EXTENSIONS, fixtureDirectory, makeCa } from './helpers/ca-fixtures'

const run = promisify(execFile)
const ENTRY = join(__dirname, '..', 'lib', 'index.ts')

// Runs in a fresh Node process (modules already loaded by the test runner would hide a load):
// the package entry, a CA provider made from the operator CA, then one leaf; it prints which of
// PKI.js and asn1js are loaded after each step. Only the EST client needs them.
const SCRIPT = `
const { readFileSync } = require('node:fs')
const loaded = () => Object.keys(require.cache).map((path) => /node_modules[\\\\/](pkijs|asn1js)[\\\\/]/.exec(path)?.[1]).filter(Boolean).sort()
const seen = {}
const { createCaCertificateProvider } = require(process.env.ENTRY)
seen.entry = loaded()
const provider = createCaCertificateProvider({ cert: readFileSync(process.env.CA_CERT, 'utf8'), key: readFileSync(process.env.CA_KEY, 'utf8') })
seen.provider = loaded()
provider.getLeaf('example.com').then((leaf) => {
  seen.leaf = loaded()
  seen.minted = leaf.cert.startsWith('-----BEGIN CERTIFICATE-----')
  process.stdout.write(JSON.stringify(seen))
})
`

test('plugin: the package entry, a CA provider and the leaves it mints load neither PKI.js nor asn1js', async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { extensions: CA_EXTENSIONS })
  const { stdout } = await run(process.execPath, ['--import', TS_LOADER, '-e', SCRIPT], {
    env: childEnv({ ENTRY, CA_CERT: ca.certPath, CA_KEY: ca.keyPath })
  })
  const seen = JSON.parse(stdout) as { entry: string[], provider: string[], leaf: string[], minted: boolean }
  t.same(seen.entry, [], 'requiring the package loads neither')
  t.same(seen.provider, [], 'checking the operator CA loads neither')
  t.equal(seen.minted, true, 'a leaf is minted')
  t.same(seen.leaf, [], 'minting loaded neither')
})

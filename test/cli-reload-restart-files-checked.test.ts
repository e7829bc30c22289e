import { test } from 'tap'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { listeningUrls, printed, runBin } from './helpers/cli-bin'
import { LOOPBACK_ORIGINS, portOf } from './helpers/cli-server'
import { startOrigin } from './helpers/servers'
import { basic, rawExchange } from './helpers/raw-client'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { fixtureDirectory, makeCa } from './helpers/ca-fixtures'

test('bin reload: a file naming a listener certificate, a CA key or a trusted CA that cannot be read changes nothing (one error line naming the key), though those settings wait for a restart: the restart would fail on them', async (t) => {
  const directory = fixtureDirectory(t)
  mkdirSync(join(directory, 'listener'))
  const listener = await makeSelfSignedCertificate(join(directory, 'listener'))
  const ca = await makeCa(directory, { name: 'Operator CA' })
  const origin = await startOrigin(t)
  const config = (changes: { listenerCert?: string, caKey?: string, trusted?: string, users?: Record<string, string> }): string => JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }, { host: '127.0.0.1', port: 0, tls: { cert: changes.listenerCert ?? listener.certPath, key: listener.keyPath } }],
    users: changes.users ?? { alice: 'pw-a' },
    destinations: LOOPBACK_ORIGINS,
    interception: { hosts: ['a.example'], ca: { cert: ca.certPath, key: changes.caKey ?? ca.keyPath }, trustedDestinationCa: changes.trusted ?? ca.certPath },
    log: { level: 'info' }
  })
  const file = join(directory, 'proxy.json')
  writeFileSync(file, config({}))
  const bin = runBin(t, ['--config', file])
  const port = portOf((await listeningUrls(bin))[0] ?? '')
  const missing = join(directory, 'missing.pem')
  const notPem = join(directory, 'not-pem.pem')
  writeFileSync(notPem, 'hello not pem\n')
  const broken = [
    [{ listenerCert: missing }, /\/listen\/1\/tls\/cert: cannot read/],
    [{ caKey: missing }, /\/interception\/ca\/key: cannot read/],
    [{ caKey: listener.keyPath }, /\/interception\/ca: /],
    [{ trusted: missing }, /\/interception\/trustedDestinationCa: cannot read/],
    [{ trusted: notPem }, /\/interception\/trustedDestinationCa: \\".*not-pem\.pem\\" must hold PEM certificates/]
  ] as const
  for (const [index, [changes, reason]] of broken.entries()) {
    writeFileSync(file, config({ ...changes, users: { bob: 'pw-b' } }))
    bin.child.kill('SIGHUP')
    const lines = await printed(bin, /configuration reload failed, the previous configuration stays/, index + 1)
    t.match(lines[index], reason)
    const bob = await rawExchange(port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basic('bob', 'pw-b')}\r\nConnection: close\r\n\r\n`)
    t.equal(bob.status, 407, 'nothing of the file applied')
  }
  t.notOk(bin.stdout().includes('configuration reloaded'))
  // The same file with its files fixed applies.
  writeFileSync(file, config({ users: { bob: 'pw-b' } }))
  bin.child.kill('SIGHUP')
  await printed(bin, /configuration reloaded/, 1)
  const bob = await rawExchange(port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basic('bob', 'pw-b')}\r\nConnection: close\r\n\r\n`)
  t.equal(bob.status, 200)
})

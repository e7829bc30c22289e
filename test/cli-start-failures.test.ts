import { test } from 'tap'
import { mkdirSync, writeFileSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { join } from 'node:path'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { parseConfig, startProxyServer } from './helpers/internals'

const config = (value: object): ReturnType<typeof parseConfig> => parseConfig({ log: { level: 'silent' }, ...value }, 'test.json', '/')

test('server: an invalid destination option in the file stops start-up with the file and its JSON Pointer named', async (t) => {
  t.throws(() => config({ listen: [{ port: 0 }], destinations: { allowedNetworks: ['10.0.0.0/99'] } }),
    { name: 'ConfigError', message: /^test\.json: \/destinations\/allowedNetworks\/0 must be a CIDR range/ })
})

test('server: a second listener whose port is in use fails start-up and releases the first listener', async (t) => {
  const blocker = createServer()
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => blocker.close(() => resolve())))
  const busy = (blocker.address() as AddressInfo).port
  // Learn a free port for the first listener, then release it for the server to take.
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const first = (probe.address() as AddressInfo).port
  await new Promise<void>((resolve) => probe.close(() => resolve()))

  await t.rejects(startProxyServer(config({ listen: [{ host: '127.0.0.1', port: first }, { host: '127.0.0.1', port: busy }] })), { code: 'EADDRINUSE' })
  const again = createServer()
  await new Promise<void>((resolve, reject) => { again.once('error', reject); again.listen(first, '127.0.0.1', resolve) })
  t.pass('the first listener was closed')
  await new Promise<void>((resolve) => again.close(() => resolve()))
})

test('server: a missing or unusable TLS file stops start-up with the listener key named', async (t) => {
  const dir = t.testdir()
  const first = await makeSelfSignedCertificate(join(dir))
  const otherDir = join(dir, 'other')
  mkdirSync(otherDir)
  const other = await makeSelfSignedCertificate(otherDir)
  await t.rejects(startProxyServer(config({ listen: [{ port: 0 }, { port: 0, tls: { cert: join(dir, 'nope.pem'), key: first.keyPath } }] })),
    { name: 'ConfigError', message: /^\/listen\/1\/tls\/cert: cannot read ".*nope\.pem" \(ENOENT\)$/ })
  await t.rejects(startProxyServer(config({ listen: [{ port: 0, tls: { cert: first.certPath, key: other.keyPath } }] })),
    { name: 'ConfigError', message: /^\/listen\/0\/tls: the certificate and key cannot be used together \(.*\)$/ })
  writeFileSync(join(dir, 'garbage.pem'), 'not a certificate')
  await t.rejects(startProxyServer(config({ listen: [{ port: 0, tls: { cert: join(dir, 'garbage.pem'), key: first.keyPath } }] })),
    { name: 'ConfigError', message: /^\/listen\/0\/tls: the certificate and key cannot be used together/ })
})

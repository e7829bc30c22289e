import { test } from 'tap'
import { createPrivateKey } from 'node:crypto'
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { runBin } from './helpers/cli-bin'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { fixtureDirectory, makeCa } from './helpers/ca-fixtures'
import { pemBody } from './helpers/development-ca-dir'
import { parseConfig, startProxyServer } from './helpers/internals'

const NO_STACK = /\n\s+at /
const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

interface KeyCase {
  name: string
  /** The configuration key (JSON Pointer) the message must name. */
  pointer: string
  keyPath: string
  key: string
  config: object
}

/** One configuration per private key the server reads: TLS listener, interception CA, EST client. */
async function keyCases (directory: string): Promise<KeyCase[]> {
  const listenerDir = join(directory, 'listener')
  const estDir = join(directory, 'est')
  mkdirSync(listenerDir)
  mkdirSync(estDir)
  const listener = await makeSelfSignedCertificate(listenerDir)
  const ca = await makeCa(directory, { name: 'Operator CA' })
  const estClient = await makeSelfSignedCertificate(estDir)
  return [
    {
      name: 'TLS listener key',
      pointer: '/listen/0/tls/key',
      keyPath: listener.keyPath,
      key: listener.key.toString(),
      config: { listen: [{ host: '127.0.0.1', port: 0, tls: { cert: listener.certPath, key: listener.keyPath } }] }
    },
    {
      name: 'interception CA key',
      pointer: '/interception/ca/key',
      keyPath: ca.keyPath,
      key: ca.key,
      config: { listen: [{ host: '127.0.0.1', port: 0 }], interception: { hosts: ['a.example'], ca: { cert: ca.certPath, key: ca.keyPath } } }
    },
    {
      name: 'EST client key',
      pointer: '/interception/est/clientKey',
      keyPath: estClient.keyPath,
      key: estClient.key.toString(),
      // The EST service is contacted at the first intercepted handshake only, never at start.
      config: { listen: [{ host: '127.0.0.1', port: 0 }], interception: { hosts: ['a.example'], est: { url: 'https://127.0.0.1:9', clientCert: estClient.certPath, clientKey: estClient.keyPath } } }
    }
  ]
}

test('bin: a TLS listener key file readable by others is refused at start with the key, the mode and the fix named, as ssh does', async (t) => {
  const directory = fixtureDirectory(t)
  const [entry] = await keyCases(directory)
  if (entry === undefined) throw new Error('no key case')
  const file = join(directory, 'proxy.json')
  writeFileSync(file, JSON.stringify(entry.config))
  chmodSync(entry.keyPath, 0o644)
  const refused = runBin(t, ['--config', file])
  t.equal(await refused.exited, 1)
  t.equal(refused.stderr(), `forward-proxy: /listen/0/tls/key: permissions 0644 for the private key "${entry.keyPath}" are too open: others may read, write or run it; it may be readable by the proxy's user, and by the file's group only when the proxy's user is in that group (modes 0600, 0400, 0640, 0440), by nobody else. Run "chmod 600 ${entry.keyPath}" if nobody else could have read it; otherwise treat the key as exposed and replace it\n`)
  t.notMatch(refused.stderr(), NO_STACK)
  t.notMatch(refused.stderr(), pemBody(entry.key).slice(0, 40), 'the key is not in the message')
  t.equal(refused.stdout(), '', 'nothing started')
})

test('server: a private key file (TLS listener, interception CA, EST client) with any bit for others, or a group write or run bit, is refused naming its key; 0600 and 0400 are used, and 0640 and 0440 when the file\'s group is the proxy\'s own', async (t) => {
  const directory = fixtureDirectory(t)
  for (const entry of await keyCases(directory)) {
    const config = parseConfig({ log: { level: 'silent' }, ...entry.config }, 'test.json', '/')
    for (const mode of [0o644, 0o604, 0o660, 0o620, 0o610, 0o601, 0o666]) {
      chmodSync(entry.keyPath, mode)
      const error = await startProxyServer(config).then(() => undefined, (e: unknown) => e as Error)
      t.equal(error?.name, 'ConfigError', `${entry.name}, mode ${mode.toString(8)}: refused`)
      t.match(error?.message, new RegExp(`^${escape(entry.pointer)}: permissions 0${mode.toString(8)} for the private key "${escape(entry.keyPath)}" are too open: .* Run "chmod 600 ${escape(entry.keyPath)}"`))
      t.notMatch(error?.message ?? '', pemBody(entry.key).slice(0, 40), `${entry.name}: the key is not in the message`)
    }
    // The file was created by this process, so its group is the process's own group.
    for (const mode of [0o600, 0o400, 0o640, 0o440]) {
      chmodSync(entry.keyPath, mode)
      const server = await startProxyServer(config)
      t.equal(server.urls.length, 1, `${entry.name}, mode 0${mode.toString(8)}: used`)
      await server.close()
    }
  }
})

test('server: an encrypted private key file (TLS listener, interception CA, EST client; PKCS#8 or traditional PEM) is refused naming its key and saying the server reads unencrypted keys only, never OpenSSL\'s "bad decrypt" or a passphrase it has no way to take', async (t) => {
  const directory = fixtureDirectory(t)
  for (const entry of await keyCases(directory)) {
    const config = parseConfig({ log: { level: 'silent' }, ...entry.config }, 'test.json', '/')
    const key = createPrivateKey(entry.key)
    const encrypted = [
      key.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'pass-6f1e' }),
      key.export({ type: key.asymmetricKeyType === 'rsa' ? 'pkcs1' : 'sec1', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'pass-6f1e' })
    ]
    for (const pem of encrypted) {
      writeFileSync(entry.keyPath, pem, { mode: 0o600 })
      const error = await startProxyServer(config).then(() => undefined, (e: unknown) => e as Error)
      t.equal(error?.name, 'ConfigError', `${entry.name}: refused`)
      t.equal(error?.message, `${entry.pointer}: the private key "${entry.keyPath}" is encrypted; the server reads unencrypted PEM keys only (decrypt it into a file readable by the proxy's user alone, mode 0600 or 0400)`)
    }
  }
})

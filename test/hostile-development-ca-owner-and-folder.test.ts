import { test } from 'tap'
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, renameSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { parseConfig, startProxyServer } from './helpers/internals'
import { freshDataDirectory, pemBody } from './helpers/development-ca-dir'

const configFor = (dataDirectory: string): ReturnType<typeof parseConfig> =>
  parseConfig({ log: { level: 'silent' }, listen: [{ host: '127.0.0.1', port: 0 }], interception: { hosts: ['a.example'] }, dataDirectory }, 'test.json', '/')

const refusal = async (dataDirectory: string): Promise<Error | undefined> =>
  await startProxyServer(configFor(dataDirectory)).then(async (server) => { await server.close(); return undefined }, (e: unknown) => e as Error)

test('a first start never writes the CA key into an existing folder others may write; the error says how to fix it', async (t) => {
  const dataDirectory = freshDataDirectory(t)
  mkdirSync(dataDirectory, { recursive: true })
  for (const mode of [0o777, 0o775, 0o1777]) {
    chmodSync(dataDirectory, mode)
    const error = await refusal(dataDirectory)
    t.equal(error?.name, 'ConfigError', `mode ${mode.toString(8)}: refused at start-up`)
    t.match(error?.message, /let other users write there and replace the CA/)
    t.match(error?.message, new RegExp(`chmod 700 ${dataDirectory.replace(/[.]/g, '\\.')}`))
    t.notOk(existsSync(join(dataDirectory, 'ca.key')), 'no key was written there')
  }
  chmodSync(dataDirectory, 0o700)
  const error = await refusal(dataDirectory)
  t.equal(error, undefined, 'once fixed, the CA is created')
})

test('an existing development CA in a folder others may write is refused, never used', async (t) => {
  const dataDirectory = freshDataDirectory(t)
  t.equal(await refusal(dataDirectory), undefined, 'first start creates the CA')
  const key = readFileSync(join(dataDirectory, 'ca.key'))
  chmodSync(dataDirectory, 0o777)
  const error = await refusal(dataDirectory)
  t.equal(error?.name, 'ConfigError')
  t.match(error?.message, /permissions 0777 for the development CA's data directory/)
  t.notMatch(error?.message ?? '', pemBody(key).slice(0, 40), 'no key material in the message')
})

test('a development CA key owned by another user (mode 0600) is refused, never used to sign', async (t) => {
  const dataDirectory = freshDataDirectory(t)
  t.equal(await refusal(dataDirectory), undefined, 'first start creates the CA')
  const keyPath = join(dataDirectory, 'ca.key')
  if (process.getuid?.() === 0) {
    // Running as root (as the proxy did in the review): give the key to another user.
    chownSync(keyPath, 4242, 4242)
  } else {
    // Not root: a key that resolves to a file root owns is another user's key just the same.
    renameSync(keyPath, `${keyPath}.mine`)
    symlinkSync('/etc/hostname', keyPath)
  }
  const error = await refusal(dataDirectory)
  t.equal(error?.name, 'ConfigError')
  t.match(error?.message, /the development CA key .* is owned by uid \d+, not by the proxy's user/)
  t.match(error?.message, /chown/, 'says how to fix it')
})

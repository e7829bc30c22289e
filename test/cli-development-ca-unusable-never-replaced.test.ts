import { test } from 'tap'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseConfig, startProxyServer, mintDevelopmentCa } from './helpers/internals'
import { freshDataDirectory, pemBody } from './helpers/development-ca-dir'

const YEAR_MS = 365 * 86_400_000

test('server: an existing development CA that cannot be used (expired, foreign key, garbage, half of it) stops start-up telling the operator which files to remove; it is never replaced', async (t) => {
  const dataDirectory = freshDataDirectory(t)
  mkdirSync(dataDirectory, { recursive: true, mode: 0o700 })
  const config = parseConfig({ log: { level: 'silent' }, listen: [{ host: '127.0.0.1', port: 0 }], interception: { hosts: ['a.example'] }, dataDirectory }, 'test.json', '/')
  const certPath = join(dataDirectory, 'ca.pem')
  const keyPath = join(dataDirectory, 'ca.key')
  const write = (cert: string | undefined, key: string | undefined): void => {
    rmSync(certPath, { force: true })
    rmSync(keyPath, { force: true })
    if (cert !== undefined) writeFileSync(certPath, cert, { mode: 0o644 })
    if (key !== undefined) writeFileSync(keyPath, key, { mode: 0o600 })
  }
  const refused = async (label: string, problem: RegExp, removeBoth = true): Promise<void> => {
    const before = [readFileSync(certPath, { flag: 'a+' }), readFileSync(keyPath, { flag: 'a+' })]
    const error = await startProxyServer(config).then(() => undefined, (e: unknown) => e as Error)
    t.equal(error?.name, 'ConfigError', `${label}: refused`)
    t.match(error?.message, problem, `${label}: says what is wrong`)
    if (removeBoth) t.match(error?.message, `remove ${certPath} and ${keyPath} to have a new one created`, `${label}: says which files to remove`)
    t.notMatch(error?.message ?? '', /PRIVATE KEY|[A-Za-z0-9+/]{40}/, `${label}: no key material in the message`)
    t.same([readFileSync(certPath, { flag: 'a+' }), readFileSync(keyPath, { flag: 'a+' })], before, `${label}: the files are left as they were`)
  }

  const expired = await mintDevelopmentCa({ now: Date.now() - 2 * YEAR_MS })
  write(expired.cert, expired.key)
  await refused('expired', /the development CA in .* cannot be used: the CA certificate expired on \d{4}-/)

  const other = await mintDevelopmentCa()
  const current = await mintDevelopmentCa()
  write(current.cert, other.key)
  await refused('a key that is not the certificate\'s', /cannot be used: the CA key does not belong to the CA certificate/)
  t.notMatch(String(await startProxyServer(config).catch((e: unknown) => e)), pemBody(other.key).slice(0, 40), 'the foreign key is not quoted')

  write('not a certificate\n', current.key)
  await refused('garbage certificate', /cannot be used: the CA certificate is not a PEM certificate/)

  write(current.cert, 'not a key\n')
  await refused('garbage key', /cannot be used: the CA key is not a PEM private key/)

  write(undefined, current.key)
  rmSync(certPath, { force: true })
  const keyOnly = await startProxyServer(config).then(() => undefined, (e: unknown) => e as Error)
  t.match(keyOnly?.message, `the development CA in ${dataDirectory} is incomplete: ${certPath} is missing. Remove ${keyPath} to have a new development CA created`)
  t.same(readFileSync(keyPath, 'latin1'), current.key, 'key only: the key is not replaced')

  write(current.cert, undefined)
  const certOnly = await startProxyServer(config).then(() => undefined, (e: unknown) => e as Error)
  t.match(certOnly?.message, `${keyPath} is missing. Remove ${certPath}`)
  t.same(readFileSync(certPath, 'latin1'), current.cert, 'certificate only: the certificate is not replaced')

  write(current.cert, current.key)
  const usable = await startProxyServer(config)
  t.equal(usable.developmentCa?.created, false, 'a valid pair put there by the operator is used as is')
  t.same(readFileSync(certPath, 'latin1'), current.cert)
  await usable.close()
})

import { test } from 'tap'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { runBin } from './helpers/cli-bin'
import { parseConfig, startProxyServer } from './helpers/internals'
import { fixtureDirectory, makeCa } from './helpers/ca-fixtures'
import { freshDataDirectory } from './helpers/development-ca-dir'

const NO_STACK = /\n\s+at /

test('bin: NODE_ENV=production refuses the development CA at start, asking for interception.ca or interception.est, and creates no CA', async (t) => {
  const dataDirectory = freshDataDirectory(t)
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({ listen: [{ host: '127.0.0.1', port: 0 }], interception: { hosts: ['a.example'] }, dataDirectory }))
  const bin = runBin(t, ['--config', file], { NODE_ENV: 'production' })
  t.equal(await bin.exited, 1)
  t.equal(bin.stderr(), 'forward-proxy: /interception: the development CA is refused when NODE_ENV=production: configure "interception.ca" (your CA\'s certificate and key files) or "interception.est" (an EST service that issues the leaves)\n')
  t.notMatch(bin.stderr(), NO_STACK)
  t.equal(bin.stdout(), '', 'nothing started')
  t.notOk(existsSync(join(dataDirectory, 'ca.key')), 'no development CA key was written')
})

test('server: under NODE_ENV=production an operator CA (interception.ca) is accepted and the development CA refused; otherwise the development CA is used', async (t) => {
  const directory = fixtureDirectory(t)
  const ca = await makeCa(directory, { name: 'Operator CA' })
  const dataDirectory = freshDataDirectory(t)
  const config = (interception: object): ReturnType<typeof parseConfig> => parseConfig({ log: { level: 'silent' }, listen: [{ host: '127.0.0.1', port: 0 }], interception: { hosts: ['a.example'], ...interception }, dataDirectory }, 'test.json', '/')
  const before = process.env.NODE_ENV
  t.teardown(() => { if (before === undefined) delete process.env.NODE_ENV; else process.env.NODE_ENV = before })

  process.env.NODE_ENV = 'production'
  const operator = await startProxyServer(config({ ca: { cert: ca.certPath, key: ca.keyPath } }))
  t.equal(operator.developmentCa, undefined, 'an operator CA is accepted in production')
  await operator.close()
  await t.rejects(startProxyServer(config({})), { name: 'ConfigError', message: /^\/interception: the development CA is refused when NODE_ENV=production/ })
  t.notOk(existsSync(join(dataDirectory, 'ca.key')), 'no development CA key was written')

  process.env.NODE_ENV = 'development'
  const development = await startProxyServer(config({}))
  t.equal(development.developmentCa?.created, true, 'NODE_ENV=development keeps the development CA')
  await development.close()
})

import { test } from 'tap'
import { chmodSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { parseConfig, startProxyServer } from './helpers/internals'
import { freshDataDirectory, pemBody } from './helpers/development-ca-dir'

test('server: a development CA key file readable by others, or writable by its group, is refused with a clear error, never used; readable by the proxy\'s own group it is used', async (t) => {
  const dataDirectory = freshDataDirectory(t)
  const config = parseConfig({ log: { level: 'silent' }, listen: [{ host: '127.0.0.1', port: 0 }], interception: { hosts: ['a.example'] }, dataDirectory }, 'test.json', '/')
  const keyPath = join(dataDirectory, 'ca.key')
  const first = await startProxyServer(config)
  await first.close()
  const key = readFileSync(keyPath)

  for (const mode of [0o644, 0o604, 0o660, 0o620]) {
    chmodSync(keyPath, mode)
    const error = await startProxyServer(config).then(() => undefined, (e: unknown) => e as Error)
    t.equal(error?.name, 'ConfigError', `mode ${mode.toString(8)}: a configuration error (printed without a stack, exit 1)`)
    t.match(error?.message, new RegExp(`^/interception \\(development CA\\): permissions 0${mode.toString(8)} for the development CA key ${keyPath.replace(/[.]/g, '\\.')} are too open`))
    t.match(error?.message, /chmod 600/, 'says how to fix it')
    t.match(error?.message, /treat the key as exposed and remove both files/, 'and what to do if others may have read it')
    t.notMatch(error?.message ?? '', pemBody(key).slice(0, 40), 'the key is not in the message')
    t.equal(statSync(keyPath).mode & 0o777, mode, 'the mode is left for the operator to fix')
  }
  t.same(readFileSync(keyPath), key, 'the key file is untouched')

  for (const mode of [0o400, 0o440]) {
    chmodSync(keyPath, mode)
    const again = await startProxyServer(config)
    t.equal(again.developmentCa?.created, false, `mode 0${mode.toString(8)}: used (the file's group is the process's own)`)
    await again.close()
  }
})

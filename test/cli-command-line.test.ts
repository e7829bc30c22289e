import { test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { configFromCommandLine, parseCommandLine } from './helpers/internals'

test('command line: --config, --config=, FORWARD_PROXY_CONFIG (the flag wins), --help', async (t) => {
  t.same(parseCommandLine([], {}), { help: false })
  t.same(parseCommandLine(['--config', 'a.json'], {}), { help: false, configPath: 'a.json' })
  t.same(parseCommandLine(['--config=b.json'], {}), { help: false, configPath: 'b.json' })
  t.same(parseCommandLine([], { FORWARD_PROXY_CONFIG: 'env.json' }), { help: false, configPath: 'env.json' })
  t.same(parseCommandLine(['--config', 'flag.json'], { FORWARD_PROXY_CONFIG: 'env.json' }), { help: false, configPath: 'flag.json' })
  t.same(parseCommandLine(['--port', '0', '--help'], {}), { help: true })
})

test('command line: unknown arguments, missing values and bad ports are refused by name', async (t) => {
  t.throws(() => parseCommandLine(['--verbose'], {}), { name: 'ConfigError', message: /unknown argument "--verbose"/ })
  t.throws(() => parseCommandLine(['proxy.json'], {}), { message: /unknown argument "proxy\.json"/ })
  t.throws(() => parseCommandLine(['--config'], {}), { message: /--config needs a value/ })
  t.throws(() => parseCommandLine(['--port', '65536'], {}), { message: /--port must be an integer from 0 to 65535, got "65536"/ })
  t.throws(() => parseCommandLine(['--port=8o'], {}), { message: /--port must be an integer/ })
})

test('command line: --host/--port override only the first listener; no file means the built-in defaults', async (t) => {
  t.same(configFromCommandLine({ help: false }, '/srv').listen, [{ host: '127.0.0.1', port: 8080 }])
  t.same(configFromCommandLine({ help: false, port: 0, host: '::1' }, '/srv').listen, [{ host: '::1', port: 0 }])
  const dir = t.testdir()
  const file = join(dir, 'proxy.json')
  writeFileSync(file, JSON.stringify({ listen: [{ host: '127.0.0.1', port: 8081 }, { host: '127.0.0.1', port: 8082 }], users: { a: 'b' } }))
  const config = configFromCommandLine({ help: false, configPath: file, port: 0 })
  t.same(config.listen, [{ host: '127.0.0.1', port: 0 }, { host: '127.0.0.1', port: 8082 }])
  t.same(config.users, { a: 'b' })
  t.equal(config.dataDirectory, join(dir, '.forward-proxy'), 'dataDirectory is relative to the file')
})

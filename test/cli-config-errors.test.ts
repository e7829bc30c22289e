import { test } from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError, loadConfigFile, parseConfig } from './helpers/internals'

const parse = (value: unknown): unknown => parseConfig(value, 'proxy.json', '/srv')

test('config: an empty file means one listener on 127.0.0.1:8080 and strict defaults', async (t) => {
  const config = parseConfig({}, 'proxy.json', '/srv')
  t.same(config.listen, [{ host: '127.0.0.1', port: 8080 }])
  t.equal(config.users, undefined)
  t.equal(config.log.level, 'info')
})

test('config: a bad port is named by its key and the expected range', async (t) => {
  t.throws(() => parse({ listen: [{ port: 70000 }] }), { name: 'ConfigError', message: 'proxy.json: /listen/0/port must be an integer from 0 to 65535' })
  t.throws(() => parse({ listen: [{ port: 'http' }] }), { message: 'proxy.json: /listen/0/port must be an integer from 0 to 65535' })
  t.throws(() => parse({ listen: [{ host: '127.0.0.1' }] }), { message: 'proxy.json: /listen/0: missing required key "port"' })
  t.throws(() => parse({ listen: [] }), { message: 'proxy.json: /listen must list at least 1 item' })
})

test('config: wrong types say what is expected', async (t) => {
  t.throws(() => parse([]), { message: 'proxy.json: (top level) must be an object' })
  t.throws(() => parse({ destinations: { allowedHosts: 'example.com' } }), { message: 'proxy.json: /destinations/allowedHosts must be an array of non-empty strings' })
  t.throws(() => parse({ destinations: { allowPrivateNetworks: 'yes' } }), { message: 'proxy.json: /destinations/allowPrivateNetworks must be true or false' })
  t.throws(() => parse({ releaseIdleMemory: 'yes' }), { message: 'proxy.json: /releaseIdleMemory must be "start", true, false, or the quiet time in milliseconds (an integer from 2000 to 86400000)' })
  t.throws(() => parse({ releaseIdleMemory: 1000 }), { message: 'proxy.json: /releaseIdleMemory must be "start", true, false, or the quiet time in milliseconds (an integer from 2000 to 86400000)' })
  t.doesNotThrow(() => parse({ releaseIdleMemory: 2000 }))
  t.doesNotThrow(() => parse({ releaseIdleMemory: 'start' }))
  t.throws(() => parse({ limits: { connectTimeout: 0 } }), { message: 'proxy.json: /limits/connectTimeout must be an integer from 1 to 2147483647' })
  t.throws(() => parse({ limits: { tunnelSetupWait: 60_001 } }), { message: 'proxy.json: /limits/tunnelSetupWait must be an integer from 0 to 60000' })
  t.doesNotThrow(() => parse({ limits: { tunnelSetupWait: 0 } }))
  t.throws(() => parse({ log: { level: 'loud' } }), { message: /^proxy\.json: \/log\/level must be one of "fatal", "error", "warn", "info"/ })
})

test('config: user names cannot hold a colon and passwords cannot be empty', async (t) => {
  t.throws(() => parse({ users: { 'a:b': 'pw' } }), { message: /proxy\.json: \/users: key "a:b" is not allowed/ })
  t.throws(() => parse({ users: { alice: '' } }), { message: 'proxy.json: /users/alice must be a non-empty string (the password) or an object { "password", and optionally "allowedHosts" (host patterns), "secrets" (secret names), "maxConcurrentTunnels", "requestsPerMinute" (positive integers), "mode" ("enforce" or "report") }' })
})

test('config: an unknown key is refused and named', async (t) => {
  t.throws(() => parse({ lisen: [] }), { message: /proxy\.json: \(top level\): unknown key "lisen"/ })
  t.throws(() => parse({ limits: { idle: 5 } }), { message: /\/limits: unknown key "idle"/ })
})

test('config: allowedPorts takes "*" or port numbers', async (t) => {
  t.equal(parseConfig({ destinations: { allowedPorts: '*' } }, 'p', '/').destinations?.allowedPorts, '*')
  t.throws(() => parse({ destinations: { allowedPorts: ['80'] } }), { message: /\/destinations\/allowedPorts must be "\*" or an array of port numbers/ })
})

test('config: TLS paths are resolved against the configuration file folder', async (t) => {
  const config = parseConfig({ listen: [{ port: 1, tls: { cert: 'c.pem', key: '/abs/k.pem' } }] }, 'p', '/srv/proxy')
  t.same(config.listen[0]?.tls, { cert: '/srv/proxy/c.pem', key: '/abs/k.pem' })
})

test('config: unreadable and non-JSON files give a ConfigError naming the file', async (t) => {
  const dir = t.testdir({ 'bad.json': '{ "listen": ' })
  t.throws(() => loadConfigFile(join(dir, 'missing.json')), { message: /missing\.json: cannot read the configuration file \(ENOENT\)/ })
  t.throws(() => loadConfigFile(join(dir, 'bad.json')), { message: /bad\.json: not valid JSON/ })
  t.ok(new ConfigError('x') instanceof Error)
})

test('config: examples/proxy.example.json is valid', async (t) => {
  const value: unknown = JSON.parse(readFileSync(join(__dirname, '..', 'examples', 'proxy.example.json'), 'utf8'))
  t.doesNotThrow(() => parseConfig(value, 'examples/proxy.example.json', '/'))
})

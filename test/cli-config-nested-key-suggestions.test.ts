import { test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { runBin } from './helpers/cli-bin'
import { parseConfig } from './helpers/internals'

const parse = (value: unknown): unknown => parseConfig(value, 'proxy.json', '/srv')

test('config: a misspelt key inside a user object (or any object a key may also give as a string, a list or false) gets "did you mean", a misspelt required key too', async (t) => {
  t.throws(() => parse({ users: { alice: { password: 'pw', alowedHosts: ['api.example.com'] } } }), { name: 'ConfigError', message: 'proxy.json: /users/alice: unknown key "alowedHosts" (did you mean "allowedHosts"?)' })
  t.throws(() => parse({ users: { alice: { password: 'pw', requestPerMinute: 60 } } }), { message: 'proxy.json: /users/alice: unknown key "requestPerMinute" (did you mean "requestsPerMinute"?)' })
  t.throws(() => parse({ users: { alice: { pasword: 'pw' } } }), { message: 'proxy.json: /users/alice: unknown key "pasword" (did you mean "password"?)' })
  t.throws(() => parse({ authFailureLimit: { maxFailure: 5 } }), { message: 'proxy.json: /authFailureLimit: unknown key "maxFailure" (did you mean "maxFailures"?)' })
  t.throws(() => parse({ upstreamProxies: [{ hosts: ['*'], url: 'direct', cA: 'ca.pem' }] }), { message: 'proxy.json: /upstreamProxies/0: unknown key "cA" (did you mean "ca"?)' })
  t.throws(() => parse({ secrets: { api: { env: 'API', host: ['api.example.com'] } } }), { message: 'proxy.json: /secrets/api: unknown key "host" (did you mean "hosts"?)' })
  t.throws(() => parse({ users: { alice: { password: 'pw', colour: 'blue' } } }), { message: /^proxy\.json: \/users\/alice must be a non-empty string \(the password\) or an object \{ "password", and optionally "allowedHosts"/ }, 'nothing close: the shapes the key takes are listed')
})

test('bin: a misspelt key inside a user object exits 1 naming it and the key meant', async (t) => {
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({ users: { alice: { password: 's3cret', alowedHosts: ['api.example.com'] } } }))
  const bin = runBin(t, ['--config', file])
  t.equal(await bin.exited, 1)
  t.match(bin.stderr(), /^forward-proxy: .*proxy\.json: \/users\/alice: unknown key "alowedHosts" \(did you mean "allowedHosts"\?\)\n$/)
  t.notMatch(bin.stderr(), /s3cret/, 'the password is not quoted')
})

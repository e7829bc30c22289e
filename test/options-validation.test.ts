import { test } from 'tap'
import { ForwardProxyOptionsError } from '../lib/index'
import { registrationError } from './helpers/servers'

const BAD_OPTIONS: Array<[string, unknown]> = [
  ['limts', { limts: {} }],
  ['auth', { auth: {} }],
  ['auth', { auth: { users: { a: 'b' }, validate: () => true } }],
  ['auth.validate', { auth: { validate: 'yes' } }],
  ['auth.users.a:b', { auth: { users: { 'a:b': 'x' } } }],
  ['auth.realm', { auth: { realm: 'say "hi"', users: { a: 'b' } } }],
  ['destinations.allowedPorts[0]', { destinations: { allowedPorts: [0] } }],
  ['destinations.allowedPorts[1]', { destinations: { allowedPorts: [80, 65536] } }],
  ['destinations.allowedPorts', { destinations: { allowedPorts: 'all' } }],
  ['destinations.allowedNetworks[0]', { destinations: { allowedNetworks: ['10.0.0.0/33'] } }],
  ['destinations.allowedHosts[0]', { destinations: { allowedHosts: ['exa mple.com'] } }],
  ['destinations.deniedHosts[0]', { destinations: { deniedHosts: ['*.'] } }],
  ['destinations.allowPrivateNetworks', { destinations: { allowPrivateNetworks: 'yes' } }],
  ['limits.connectTimeout', { limits: { connectTimeout: -1 } }],
  ['limits.maxConcurrentTunnels', { limits: { maxConcurrentTunnels: 0 } }],
  ['limits.tunnelIdleTimeout', { limits: { tunnelIdleTimeout: 1.5 } }],
  ['limits.tunnelSetupWait', { limits: { tunnelSetupWait: -1 } }],
  ['limits.tunnelSetupWait', { limits: { tunnelSetupWait: 60_001 } }],
  ['limits.tunnelSetupWait', { limits: { tunnelSetupWait: '5' } }],
  ['via', { via: 'two words' }],
  ['resolver', { resolver: 'dns' }]
]

test('Registration: every bad option fails registration with an error naming it', async (t) => {
  for (const [option, options] of BAD_OPTIONS) {
    const error = await registrationError(options)
    t.ok(error instanceof ForwardProxyOptionsError, `${option}: a ForwardProxyOptionsError`)
    t.equal((error as ForwardProxyOptionsError).option, option, `${option}: named in .option`)
    t.match((error as Error).message, `option "${option}"`, `${option}: named in the message`)
  }
})

test('Registration: valid options register, and the caller\'s options are never mutated', async (t) => {
  const options = { auth: { users: { alice: 's3cret' } }, destinations: { allowedHosts: ['*.Example.COM'], allowedPorts: [443] }, limits: { connectTimeout: 500 } }
  const copy = structuredClone(options)
  t.equal(await registrationError(options), undefined)
  t.same(options, copy)
  t.equal(await registrationError({ limits: { tunnelSetupWait: 0 } }), undefined, 'limits.tunnelSetupWait 0 turns the wait off')
})

import { test } from 'tap'
import { ForwardProxyOptionsError } from '../lib/index'
import { registrationError, startProxy } from './helpers/servers'
import { basic, openTunnel } from './helpers/raw-client'
import { ConfigError, parseConfig } from './helpers/internals'

test('Report mode options: a mode other than "enforce" or "report" fails registration naming destinations.mode or the user\'s mode; both valid modes register', async (t) => {
  const modeProblem = /must be "enforce" \(the default: refuse\) or "report" \(forward, and log what would be refused\)/
  for (const [option, options] of [
    ['destinations.mode', { destinations: { mode: 'audit' } }],
    ['destinations.mode', { destinations: { mode: 'REPORT' } }],
    ['auth.users.bob.mode', { auth: { users: { bob: { password: 'pw', mode: 'audit' } } } }],
    ['auth.users.bob.mode', { auth: { users: { bob: { password: 'pw', mode: true } } } }]
  ] as const) {
    const error = await registrationError(options)
    t.ok(error instanceof ForwardProxyOptionsError, `${JSON.stringify(options)} is refused`)
    t.match(error, { option, message: modeProblem })
  }
  for (const mode of ['enforce', 'report']) {
    t.equal(await registrationError({ destinations: { mode }, auth: { users: { bob: { password: 'pw', mode } } } }), undefined, `"${mode}" registers`)
  }
})

test('Report mode options: a user from validate with an unusable mode gets 500 proxy_internal_error rather than a policy that silently reports or enforces', async (t) => {
  const proxy = await startProxy(t, { auth: { validate: (name) => ({ name, allowedHosts: ['listed.test'], mode: 'audit' as 'report' }) } })
  const tunnel = await openTunnel(proxy.port, 'elsewhere.test:443', { 'Proxy-Authorization': basic('bob', 'pw') })
  tunnel.socket.destroy()
  t.equal(tunnel.status, 500)
  t.match(tunnel.head, /error=proxy_internal_error/)
})

test('Report mode in the configuration file: "mode" of destinations and of a user takes "enforce" or "report"; anything else is a ConfigError naming the key', async (t) => {
  const parse = (value: object): unknown => parseConfig(value, 'proxy.json', '/')
  t.doesNotThrow(() => parse({ destinations: { mode: 'report' }, users: { bob: { password: 'pw', mode: 'report', allowedHosts: ['example.com'] } } }))
  t.throws(() => parse({ destinations: { mode: 'audit' } }), new ConfigError('proxy.json: /destinations/mode must be one of "enforce", "report"'))
  t.throws(() => parse({ users: { bob: { password: 'pw', mode: 'audit' } } }), { name: 'ConfigError', message: /^proxy\.json: \/users\/bob must be .*"mode" \("enforce" or "report"\)/ })
})

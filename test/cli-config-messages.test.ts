import { test } from 'tap'
import { parseConfig } from './helpers/internals'

const parse = (value: unknown): unknown => parseConfig(value, 'proxy.json', '/srv')

test('config: an unknown key suggests the closest known key at its level, and nothing when none is close', async (t) => {
  t.throws(() => parse({ user: { alice: 's3cret' } }), { name: 'ConfigError', message: 'proxy.json: (top level): unknown key "user" (did you mean "users"?)' })
  t.throws(() => parse({ listen: [{ port: 0, tsl: { cert: 'a', key: 'b' } }] }), { message: 'proxy.json: /listen/0: unknown key "tsl" (did you mean "tls"?)' })
  t.throws(() => parse({ destinations: { allowedNetwork: ['10.0.0.0/8'] } }), { message: 'proxy.json: /destinations: unknown key "allowedNetwork" (did you mean "allowedNetworks"?)' })
  t.throws(() => parse({ colour: 'blue' }), { message: 'proxy.json: (top level): unknown key "colour"' })
})

test('config: a bad CIDR range names the file and its JSON Pointer like the schema errors', async (t) => {
  t.throws(() => parse({ destinations: { allowedNetworks: ['127.0.0.1/32', '10.0.0.0/33'] } }), {
    name: 'ConfigError',
    message: 'proxy.json: /destinations/allowedNetworks/1 must be a CIDR range or an IP address, e.g. "10.1.0.0/16" (got "10.0.0.0/33")'
  })
  t.throws(() => parse({ destinations: { allowedNetworks: ['intranet'] } }), { message: /^proxy\.json: \/destinations\/allowedNetworks\/0 must be a CIDR range/ })
  t.doesNotThrow(() => parse({ destinations: { allowedNetworks: ['10.1.0.0/16', '::1', 'fd00::/8'] } }), 'valid ranges and addresses pass')
})

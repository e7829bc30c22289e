import { test } from 'tap'
import { parseConfig } from '../lib/cli/config'

const parse = (value: unknown): unknown => parseConfig(value, 'proxy.json', '/srv')

test('config: parts of the contract a later version brings (EST, the development CA) are refused as not supported yet, never ignored', async (t) => {
  t.throws(() => parse({ interception: { hosts: ['a.example'], ca: { cert: 'ca.pem', key: 'ca.key' }, est: { url: 'https://ca.example' } } }), {
    name: 'ConfigError',
    message: /^proxy\.json: \/interception\/est: EST enrollment is not supported yet in this version/
  })
  t.throws(() => parse({ interception: { hosts: ['a.example'] } }), {
    name: 'ConfigError',
    message: /^proxy\.json: \/interception: needs "ca" \(the operator CA's certificate and key files\) in this version/
  })
})

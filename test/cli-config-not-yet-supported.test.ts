import { test } from 'tap'
import { parseConfig } from '../lib/cli/config'

const parse = (value: unknown): unknown => parseConfig(value, 'proxy.json', '/srv')

test('config: keys of later versions (interception, headers) are refused as not supported yet, never ignored', async (t) => {
  t.throws(() => parse({ interception: { hosts: ['a.example'] } }), { name: 'ConfigError', message: 'proxy.json: /interception: TLS interception is not supported yet in this version' })
  t.throws(() => parse({ headers: [] }), { message: /^proxy\.json: \/headers: header rules are not supported yet in this version/ })
})

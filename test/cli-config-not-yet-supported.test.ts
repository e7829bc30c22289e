import { test } from 'tap'
import { parseConfig } from '../lib/cli/config'

const parse = (value: unknown): ReturnType<typeof parseConfig> => parseConfig(value, 'proxy.json', '/srv')

test('config: EST, a part of the contract a later version brings, is refused as not supported yet, never ignored', async (t) => {
  t.throws(() => parse({ interception: { hosts: ['a.example'], ca: { cert: 'ca.pem', key: 'ca.key' }, est: { url: 'https://ca.example' } } }), {
    name: 'ConfigError',
    message: /^proxy\.json: \/interception\/est: EST enrollment is not supported yet in this version/
  })
  t.throws(() => parse({ interception: { hosts: ['a.example'], est: { url: 'https://ca.example' } } }), {
    name: 'ConfigError',
    message: /^proxy\.json: \/interception\/est: EST enrollment is not supported yet/
  }, 'est alone is not taken as "neither ca nor est" (no development CA instead of the EST service asked for)')
})

test('config: interception without ca (nor est) is accepted: the development CA of dataDirectory signs the leaves', async (t) => {
  const config = parse({ interception: { hosts: ['a.example'] }, dataDirectory: 'state' })
  t.same(config.interception, { hosts: ['a.example'] })
  t.equal(config.dataDirectory, '/srv/state')
})

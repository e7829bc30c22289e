import { test } from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseConfig } from './helpers/internals'

const parse = (value: unknown): ReturnType<typeof parseConfig> => parseConfig(value, 'proxy.json', '/srv')
const PASSWORD = 'config-est-password-0a9d'

test('config: interception.est is accepted with its file paths resolved against the file\'s folder', async (t) => {
  const config = parse({
    interception: {
      hosts: ['a.example'],
      est: { url: 'https://ca.example:8443', label: 'proxy-leaves', username: 'proxy', password: PASSWORD, clientCert: 'est/client.pem', clientKey: 'est/client.key', ca: '/etc/est/ca.pem', timeout: 20000 }
    }
  })
  t.same(config.interception?.est, {
    url: 'https://ca.example:8443',
    label: 'proxy-leaves',
    username: 'proxy',
    password: PASSWORD,
    clientCert: '/srv/est/client.pem',
    clientKey: '/srv/est/client.key',
    ca: '/etc/est/ca.pem',
    timeout: 20000
  })
})

test('config: interception with both ca and est is refused rather than one silently winning', async (t) => {
  t.throws(() => parse({ interception: { hosts: ['a.example'], ca: { cert: 'ca.pem', key: 'ca.key' }, est: { url: 'https://ca.example' } } }), {
    name: 'ConfigError',
    message: 'proxy.json: /interception: give either "ca" (leaves signed by a local CA key) or "est" (leaves enrolled from an EST service), not both'
  })
})

test('config: bad interception.est values are refused naming the key, never echoing the password', async (t) => {
  const cases: Array<[string, object, string]> = [
    ['no url', { username: 'proxy', password: PASSWORD }, 'proxy.json: /interception/est: missing required key "url"'],
    ['plain http url', { url: 'http://ca.example' }, 'proxy.json: /interception/est/url must be an https:// URL of the EST server (https://host[:port])'],
    ['password without username', { url: 'https://ca.example', password: PASSWORD }, 'proxy.json: /interception/est: "password" needs "username" too'],
    ['username without password', { url: 'https://ca.example', username: 'proxy' }, 'proxy.json: /interception/est: "username" needs "password" too'],
    ['client certificate without key', { url: 'https://ca.example', clientCert: 'c.pem' }, 'proxy.json: /interception/est: "clientCert" needs "clientKey" too'],
    ['user name with a colon', { url: 'https://ca.example', username: 'a:b', password: PASSWORD }, 'proxy.json: /interception/est/username must be a non-empty user name without ":"'],
    ['label with a slash', { url: 'https://ca.example', label: 'a/b' }, 'proxy.json: /interception/est/label must be 1 to 64 letters, digits, "-" or "_"'],
    ['timeout zero', { url: 'https://ca.example', timeout: 0 }, 'proxy.json: /interception/est/timeout must be an integer from 1 to 600000'],
    ['unknown key', { url: 'https://ca.example', passwrod: PASSWORD }, 'proxy.json: /interception/est: unknown key "passwrod" (did you mean "password"?)'],
    ['empty password', { url: 'https://ca.example', username: 'proxy', password: '' }, 'proxy.json: /interception/est/password must be a non-empty string']
  ]
  for (const [what, est, message] of cases) {
    t.throws(() => parse({ interception: { hosts: ['a.example'], est } }), { name: 'ConfigError', message }, what)
  }
})

test('config: examples/proxy-est.example.json is valid, with the EST server CA resolved beside it', async (t) => {
  const examples = join(__dirname, '..', 'examples')
  const value: unknown = JSON.parse(readFileSync(join(examples, 'proxy-est.example.json'), 'utf8'))
  const config = parseConfig(value, 'examples/proxy-est.example.json', examples)
  t.equal(config.interception?.est?.url, 'https://localhost:8443')
  t.equal(config.interception?.est?.ca, join(examples, 'est-ca.pem'))
  t.equal(config.interception?.ca, undefined)
})

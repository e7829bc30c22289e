import { test } from 'tap'
import { ForwardProxyOptionsError } from '../lib/index'
import { registrationError as registrationErrorOf } from './helpers/servers'

const VALUE = 'sk-test-0123456789abcdef-do-not-print'

async function registrationError (secrets: unknown): Promise<ForwardProxyOptionsError | undefined> {
  const error = await registrationErrorOf({ secrets })
  if (error === undefined || error instanceof ForwardProxyOptionsError) return error
  throw error
}

const good = { name: 'api', value: VALUE, hosts: ['api.example.com'] }

test('Secrets: bad entries of the secrets option are refused at registration, naming the entry and never quoting a value', async (t) => {
  const cases: Array<[string, unknown]> = [
    ['secrets', { api: good }],
    ['secrets[0]', ['api']],
    ['secrets[0].name', [{ ...good, name: 'has space' }]],
    ['secrets[0].value', [{ ...good, value: 'short' }]],
    ['secrets[0].value', [{ ...good, value: `${VALUE} with spaces` }]],
    ['secrets[0].value', [{ ...good, value: `${VALUE}\r\nX-Injected: 1` }]],
    ['secrets[0].hosts', [{ ...good, hosts: [] }]],
    ['secrets[0].hosts[0]', [{ ...good, hosts: ['exa mple.com'] }]],
    ['secrets[0].hosts[1]', [{ ...good, hosts: ['api.example.com', 'api.example.com:0'] }]],
    ['secrets[0].hosts[0]', [{ ...good, hosts: ['api.example.com:65536'] }]],
    ['secrets[0].hosts[0]', [{ ...good, hosts: ['[::1]:x'] }]],
    ['secrets[0].hosts[0]', [{ ...good, hosts: [443] }]],
    ['secrets[0].placeholder', [{ ...good, placeholder: 'a b c d e f g' }]],
    ['secrets[0].placeholder', [{ ...good, placeholder: 'short' }]],
    ['secrets[0].env', [{ ...good, env: 'X' }]],
    ['secrets[0]', [{ ...good, source: { getValue: async () => VALUE } }]],
    ['secrets[0]', [{ name: 'api', hosts: ['a.example'] }]],
    ['secrets[0].source', [{ name: 'api', hosts: ['a.example'], source: { value: VALUE } }]],
    ['secrets[1].name', [good, { ...good, value: `${VALUE}-2` }]],
    ['secrets[1].placeholder', [{ ...good, placeholder: 'PLACEHOLDER_ONE' }, { ...good, name: 'b', placeholder: 'PLACEHOLDER_ONE_TWO' }]],
    ['secrets.placeholder', [{ ...good, placeholder: 'PLACEHOLDER_ONE' }, { ...good, name: 'b', value: 'xxPLACEHOLDER_ONExx' }]]
  ]
  for (const [option, secrets] of cases) {
    const error = await registrationError(secrets)
    t.equal(error?.option, option, `${JSON.stringify(secrets).slice(0, 80)}: refused naming ${option}`)
    t.notOk(error?.message.includes(VALUE), 'the value is never in the message')
  }
  t.equal(await registrationError([good, { name: 'b', value: `${VALUE}-b`, hosts: ['*'], placeholder: 'PLACEHOLDER_B' }]), undefined, 'valid secrets register')
  t.equal(await registrationError([]), undefined, 'an empty list is no secrets')
  t.equal(await registrationError([{ ...good, hosts: ['api.example.com:8443', '*.example.com:443', '[::1]:8443', '::1', '10.0.0.0/8', '127.0.0.1:1'] }]), undefined, 'hosts with and without a port register')
  t.equal(await registrationError([{ name: 'vault', hosts: ['*'], source: { getValue: async () => VALUE } }]), undefined, 'a source instead of a value registers')
})

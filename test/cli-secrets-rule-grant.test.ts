// A header rule's {{secret:NAME}} is injected only for users granted NAME: the bin hands the rule
// to the plugin with the secret's placeholder, which the plugin replaces like a client's, checked
// against the user's `secrets`. A user without a `secrets` list is granted every secret.
import { test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { interceptionConfig, makeInterceptionPki } from './helpers/interception-pki'
import { LOOPBACK_ORIGINS, portOf } from './helpers/cli-server'
import { listeningUrls, runBin } from './helpers/cli-bin'
import { startTlsOrigin } from './helpers/intercepting-proxy'
import { openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'

const ONE = 'REAL1/ab+cd!ef=gh'
const TWO = 'sk-two-5e8d1c7a9b3f'

const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

test('bin: a header rule using a secret the user is not granted gets 403 with nothing sent; a user granted it, or with no secrets list, gets the value', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const file = join(t.testdir(), 'proxy.json')
  const granted = [`127.0.0.1:${origin.port}`]
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    destinations: LOOPBACK_ORIGINS,
    interception: interceptionConfig(pki, ['127.0.0.1']),
    users: {
      agent: { password: 'agent-pw', secrets: ['one'] },
      twin: { password: 'twin-pw', secrets: ['one', 'two'] },
      other: 'other-pw'
    },
    secrets: { one: { env: 'FFP_TEST_ONE', hosts: granted }, two: { env: 'FFP_TEST_TWO', hosts: granted } },
    headers: [{ hosts: ['127.0.0.1'], set: { 'X-Two': '{{secret:two}}' } }],
    log: { level: 'info' }
  }))
  const bin = runBin(t, ['--config', file], { FFP_TEST_ONE: ONE, FFP_TEST_TWO: TWO })
  const port = portOf((await listeningUrls(bin))[0])
  const target = `127.0.0.1:${origin.port}`
  const as = async (user: string, password: string, path: string): Promise<{ status: number, head: string, body: string }> => {
    const socket = await openInterceptedTls(t, port, target, { ca: pki.operatorCa.cert }, { 'Proxy-Authorization': basic(user, password) })
    return await rawTlsExchange(socket, `GET ${path} HTTP/1.1\r\nHost: ${target}\r\nConnection: close\r\n\r\n`)
  }

  const refused = await as('agent', 'agent-pw', '/agent')
  t.equal(refused.status, 403, 'agent is not granted two')
  t.match(refused.head, /proxy-status: fastify-forward-proxy; error=http_request_denied; details="secret not granted to this user"/i)
  t.notOk(refused.head.includes(TWO) || refused.body.includes(TWO))

  // Sent after the refusal: had agent's request left, it would have reached the origin first.
  t.equal((await as('twin', 'twin-pw', '/twin')).status, 200)
  t.equal((await as('other', 'other-pw', '/other')).status, 200)
  t.same(origin.requests.map((seen) => [seen.url, seen.headers['x-two']]), [['/twin', TWO], ['/other', TWO]], 'only granted users\' requests left, with the value')

  bin.child.kill('SIGTERM')
  await bin.exited
  const refusal = bin.stdout().split('\n').find((line) => line.includes('"access"') && line.includes('"status":403'))
  t.match(refusal, /"secrets":\["two"\]/, 'the access line names the refused secret')
  t.notOk(bin.stdout().includes(TWO) || bin.stderr().includes(TWO), 'the value is in no output')
})

import { test } from 'tap'
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { interceptionConfig, makeInterceptionPki } from './helpers/interception-pki'
import { LOOPBACK_ORIGINS, portOf } from './helpers/cli-server'
import { listeningUrls, runBin } from './helpers/cli-bin'
import { parseConfig } from './helpers/internals'

const curl = promisify(execFile)
const SECRET = 'sk-live-0c8e6a4f2d1b3a5c7e9f0b2d4c6a8e1f'

test('bin: "interception" may leave out "hosts" when "secrets" name the hosts: it starts, and a placeholder toward the secret\'s host is replaced inside the intercepted tunnel (curl)', async (t) => {
  const pki = await makeInterceptionPki(t)
  const seen: Array<string | undefined> = []
  const origin = createServer({ cert: pki.originLeaf.cert, key: pki.originLeaf.key }, (req, res) => {
    seen.push(req.headers.authorization)
    res.end('ok')
  })
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { origin.closeAllConnections(); origin.close(() => resolve()) }))
  const port = (origin.address() as AddressInfo).port

  const { hosts: _hosts, ...interception } = interceptionConfig(pki, [])
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    destinations: LOOPBACK_ORIGINS,
    interception,
    secrets: { api: { env: 'FFP_TEST_API_TOKEN', hosts: [`127.0.0.1:${port}`], placeholder: 'PLACEHOLDER_API' } },
    log: { level: 'warn' }
  }))
  const bin = runBin(t, ['--config', file], { FFP_TEST_API_TOKEN: SECRET })
  const [url] = await listeningUrls(bin)
  t.match(bin.stdout(), /interception: the secrets' hosts only \(leaves signed by /, 'the summary says what is intercepted')

  const answer = await curl('curl', ['-sS', '--proxy', `http://127.0.0.1:${portOf(url)}`, '--cacert', pki.operatorCa.certPath, '-H', 'Authorization: Bearer PLACEHOLDER_API', `https://127.0.0.1:${port}/v1/me`])
  t.equal(answer.stdout, 'ok')
  t.same(seen, [`Bearer ${SECRET}`], 'the tunnel was intercepted and the secret put in place of its placeholder')
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
})

test('config: "interception" without "hosts" and without secrets is refused, naming the key and when it may be left out', async (t) => {
  t.throws(() => parseConfig({ interception: { ca: { cert: 'ca.pem', key: 'ca.key' } } }, 'proxy.json', '/srv'), {
    name: 'ConfigError',
    message: 'proxy.json: /interception: missing required key "hosts" (the hosts to intercept; it may be left out when "secrets" name the hosts)'
  })
  const config = parseConfig({ interception: {}, secrets: { api: { env: 'API', hosts: ['api.example.com'] } } }, 'proxy.json', '/srv')
  t.strictSame(config.interception?.hosts, [], 'with secrets it stands for no host beside theirs')
})

import { test, type Test } from 'tap'
import { execFile } from 'node:child_process'
import { chmodSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { interceptionConfig, makeInterceptionPki, type InterceptionPki } from './helpers/interception-pki'
import { LOOPBACK_ORIGINS, portOf } from './helpers/cli-server'
import { listeningUrls, runBin } from './helpers/cli-bin'
import { startOrigin, type Origin } from './helpers/servers'
import { ConfigError, loadSecrets, parseConfig } from './helpers/internals'
import { expectNothingDialedBefore, logAccepts, type AcceptLog } from './helpers/nothing-dialed'

const curl = promisify(execFile)
// Long and distinctive, so a search of every output for it cannot match by chance.
const SECRET = 'sk-live-7f3c9a1e5b2d4c6f8a0b9e7d5c3a1f2e'

async function startTlsOrigin (t: Test, pki: InterceptionPki): Promise<{ port: number, seen: Array<string | undefined>, accepts: AcceptLog }> {
  const seen: Array<string | undefined> = []
  const origin = createServer({ cert: pki.originLeaf.cert, key: pki.originLeaf.key }, (req, res) => {
    seen.push(req.headers.authorization)
    res.end('ok')
  })
  const accepts = logAccepts(origin, 'requests')
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { origin.closeAllConnections(); origin.close(() => resolve()) }))
  return { port: (origin.address() as AddressInfo).port, seen, accepts }
}

function configWithSecret (pki: InterceptionPki, secret: object): object {
  return {
    listen: [{ host: '127.0.0.1', port: 0 }],
    destinations: LOOPBACK_ORIGINS,
    interception: interceptionConfig(pki, ['127.0.0.1']),
    secrets: { api: secret },
    headers: [{ hosts: ['127.0.0.1'], set: { Authorization: 'Bearer {{secret:api}}' } }],
    log: { level: 'info' }
  }
}

test('bin: a secret read from an environment variable is injected inside intercepted tunnels only; a plain http:// request to its host gets 403 with nothing sent; the value appears in no output of the process', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const plainOrigin: Origin = await startOrigin(t)
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify(configWithSecret(pki, { env: 'FFP_TEST_API_TOKEN', hosts: [`127.0.0.1:${origin.port}`] })))
  const bin = runBin(t, ['--config', file], { FFP_TEST_API_TOKEN: SECRET })
  const [url] = await listeningUrls(bin)
  const proxy = `http://127.0.0.1:${portOf(url)}`
  t.match(bin.stdout(), /secrets: api \(\$FFP_TEST_API_TOKEN, for 127\.0\.0\.1:\d+, placeholder ffp_placeholder_api_[0-9a-f]{16}\)/, 'the start-up summary names the secret and where it comes from')

  const intercepted = await curl('curl', ['-sS', '--proxy', proxy, '--cacert', pki.operatorCa.certPath, `https://127.0.0.1:${origin.port}/v1/me`])
  t.equal(intercepted.stdout, 'ok')
  t.same(origin.seen, [`Bearer ${SECRET}`], 'the destination got the value from the environment')

  const plain = await curl('curl', ['-sS', '-i', '--proxy', proxy, `http://127.0.0.1:${plainOrigin.port}/plain`])
  t.match(plain.stdout, /^HTTP\/1\.1 403 /)
  t.match(plain.stdout, /proxy-status: fastify-forward-proxy; error=http_request_denied; details="credentials are not sent over plain http"/i)
  await expectNothingDialedBefore(t, plainOrigin.accepts, 'nothing reached the destination in clear')

  bin.child.kill('SIGTERM')
  await bin.exited
  t.match(bin.stdout(), /"access"/, 'the access log was on')
  t.notOk(bin.stdout().includes(SECRET) || bin.stderr().includes(SECRET), 'the value is in no log line, summary or error')
  t.notOk(intercepted.stdout.includes(SECRET) || plain.stdout.includes(SECRET), 'nor in anything the client got')
})

test('bin: a placeholder the client sends is replaced for the secret\'s hosts, which are intercepted though interception.hosts does not list them (curl); toward another host it gets 403 and the access line names the secret, never the value', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const file = join(t.testdir(), 'proxy.json')
  const config = configWithSecret(pki, { env: 'FFP_TEST_API_TOKEN', hosts: [`127.0.0.1:${origin.port}`], placeholder: 'PLACEHOLDER_API' }) as Record<string, unknown>
  writeFileSync(file, JSON.stringify({ ...config, headers: undefined, interception: { ...(config.interception as object), hosts: ['localhost'] } }))
  const bin = runBin(t, ['--config', file], { FFP_TEST_API_TOKEN: SECRET })
  const [url] = await listeningUrls(bin)
  const proxy = `http://127.0.0.1:${portOf(url)}`
  const granted = await curl('curl', ['-sS', '--proxy', proxy, '--cacert', pki.operatorCa.certPath, '-H', 'Authorization: Bearer PLACEHOLDER_API', `https://127.0.0.1:${origin.port}/v1/me`])
  t.equal(granted.stdout, 'ok')
  t.same(origin.seen, [`Bearer ${SECRET}`], 'the destination got the value')
  const dialedBefore = origin.accepts.accepted
  const other = await curl('curl', ['-sS', '-i', '--proxy', proxy, '--cacert', pki.operatorCa.certPath, '-H', 'Authorization: Bearer PLACEHOLDER_API', `https://localhost:${origin.port}/steal`])
  t.match(other.stdout, /\r\nHTTP\/2 403 /, 'curl speaks HTTP/2 inside the tunnel')
  t.match(other.stdout, /proxy-status: fastify-forward-proxy; error=http_request_denied; details="secret not allowed for this destination"/i)
  t.equal(origin.seen.length, 1)
  await expectNothingDialedBefore(t, origin.accepts, 'nothing reached the other host', { after: dialedBefore })
  bin.child.kill('SIGTERM')
  await bin.exited
  const refusal = bin.stdout().split('\n').find((line) => line.includes('"access"') && line.includes('"status":403'))
  t.match(refusal, /"secrets":\["api"\]/, 'the access line names the secret')
  t.notOk(bin.stdout().includes(SECRET) || bin.stderr().includes(SECRET) || other.stdout.includes(SECRET), 'the value is in no output')
})

test('bin: users with their own policy (the configuration contract): a user limited to some secrets and hosts, and a string user who may use every secret (curl)', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const file = join(t.testdir(), 'proxy.json')
  const config = configWithSecret(pki, { env: 'FFP_TEST_API_TOKEN', hosts: [`127.0.0.1:${origin.port}`], placeholder: 'PLACEHOLDER_API' }) as Record<string, unknown>
  writeFileSync(file, JSON.stringify({
    ...config,
    headers: undefined,
    users: {
      alice: 's3cret',
      'agent-7': { password: 'pw7', allowedHosts: ['127.0.0.1'], secrets: ['api'], maxConcurrentTunnels: 20, requestsPerMinute: 600 },
      'agent-8': { password: 'pw8', secrets: [] }
    }
  }))
  const bin = runBin(t, ['--config', file], { FFP_TEST_API_TOKEN: SECRET })
  const [url] = await listeningUrls(bin)
  // A refused CONNECT makes curl exit 56: its output is what matters here.
  const through = async (user: string, target: string): Promise<string> => await curl('curl', ['-sS', '-i', '--proxy', `http://${user}@127.0.0.1:${portOf(url)}`, '--cacert', pki.operatorCa.certPath, '-H', 'Authorization: Bearer PLACEHOLDER_API', target])
    .then((result) => result.stdout, (error: { stdout?: string }) => error.stdout ?? '')
  t.match(await through('agent-7:pw7', `https://127.0.0.1:${origin.port}/a`), /\r\nHTTP\/2 200 /)
  t.match(await through('alice:s3cret', `https://127.0.0.1:${origin.port}/b`), /\r\nHTTP\/2 200 /, 'a string user may use every secret')
  t.match(await through('agent-8:pw8', `https://127.0.0.1:${origin.port}/c`), /details="secret not granted to this user"/, 'a user whose secrets do not list it is refused')
  t.match(await through('agent-7:pw7', `https://localhost:${origin.port}/d`), /^HTTP\/1\.1 403 [^]*details="host not allowed for this user"/, 'agent-7 reaches only its allowedHosts')
  t.same(origin.seen, [`Bearer ${SECRET}`, `Bearer ${SECRET}`], 'only the allowed requests reached the destination, with the value')
  t.match(bin.stdout(), /authentication: on \(Basic, 3 users\)/)
})

test('bin: a secret whose environment variable is missing fails start-up with one line naming the secret and the variable', async (t) => {
  const pki = await makeInterceptionPki(t)
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify(configWithSecret(pki, { env: 'FFP_TEST_UNSET_TOKEN', hosts: ['127.0.0.1'] })))
  const bin = runBin(t, ['--config', file])
  t.equal(await bin.exited, 1)
  t.equal(bin.stderr(), 'forward-proxy: /secrets/api: the environment variable FFP_TEST_UNSET_TOKEN is not set\n')
})

test('secrets from files: one trailing line break dropped; a file others may read, an empty value or one a header cannot carry is refused naming the secret, never the value', async (t) => {
  const dir = t.testdir()
  const write = (name: string, content: string, mode: number): string => {
    const path = join(dir, name)
    writeFileSync(path, content)
    chmodSync(path, mode)
    return path
  }
  const values = loadSecrets({
    fromFile: { file: write('token', `${SECRET}\n`, 0o600), hosts: ['a.example'] },
    fromEnv: { env: 'FFP_TEST_FILE_CASE', hosts: ['a.example'] }
  }, { FFP_TEST_FILE_CASE: 'env-value' })
  t.equal(values.get('fromFile'), SECRET)
  t.equal(values.get('fromEnv'), 'env-value')

  const refused = (secret: object, env: NodeJS.ProcessEnv = {}): string => {
    try {
      loadSecrets({ s: secret as { hosts: string[] } }, env)
    } catch (error) {
      t.ok(error instanceof ConfigError)
      return (error as Error).message
    }
    return 'accepted'
  }
  const open = refused({ file: write('open', SECRET, 0o644), hosts: ['a.example'] })
  t.match(open, /^\/secrets\/s: permissions 0644 for the secret file ".*open" are too open/)
  t.match(refused({ file: join(dir, 'missing'), hosts: ['a.example'] }), /^\/secrets\/s: cannot read ".*missing" \(ENOENT\)/)
  t.equal(refused({ env: 'E', hosts: ['a.example'] }, { E: '\n' }), '/secrets/s: the value is empty')
  const injected = refused({ env: 'E', hosts: ['a.example'] }, { E: `${SECRET}\r\nX-Injected: 1` })
  t.match(injected, /^\/secrets\/s: the value must be 8 to 4096 visible ASCII characters/)
  for (const message of [open, injected]) t.notOk(message.includes(SECRET), 'the value is never in the message')
})

test('config: a rule may use a secret only for hosts the secret grants; an unknown secret, both or neither of env and file, secrets without interception are refused naming the key', async (t) => {
  const base = { listen: [{ host: '127.0.0.1', port: 0 }], interception: { hosts: ['other.example'] } }
  const rule = (hosts: string[]): object => ({ hosts, set: { Authorization: 'Bearer {{secret:gh}}' } })
  const parse = (value: object): string => {
    try {
      parseConfig({ ...base, ...value }, 'proxy.json', '/etc/proxy')
      return 'accepted'
    } catch (error) {
      return (error as Error).message
    }
  }
  const granted = (hosts: string[]): object => ({ secrets: { gh: { env: 'GH', hosts } } })
  t.equal(parse({ ...granted(['*.example.com']), headers: [rule(['api.example.com', '*.v1.example.com'])] }), 'accepted')
  t.equal(parse({ ...granted(['*']), headers: [rule(['*'])] }), 'accepted')
  t.equal(parse({ ...granted(['10.0.0.0/8']), headers: [rule(['10.1.2.3'])] }), 'accepted')
  t.equal(parse({ ...granted(['api.example.com']), headers: [rule(['*.example.com'])] }),
    'proxy.json: /headers/0/set/Authorization uses the secret "gh" for "*.example.com", a host its /secrets/gh/hosts does not grant')
  t.equal(parse({ ...granted(['api.example.com']), headers: [rule(['*'])] }),
    'proxy.json: /headers/0/set/Authorization uses the secret "gh" for "*", a host its /secrets/gh/hosts does not grant')
  t.equal(parse({ ...granted(['*.example.com']), headers: [rule(['example.com'])] }),
    'proxy.json: /headers/0/set/Authorization uses the secret "gh" for "example.com", a host its /secrets/gh/hosts does not grant')
  t.equal(parse({ headers: [rule(['a.example'])] }), 'proxy.json: /headers/0/set/Authorization names the secret "gh", which /secrets does not define')
  t.equal(parse({ ...granted(['::1']), headers: [rule(['::1'])] }), 'accepted', 'a bare IPv6 literal in the rule, as the secret grants it')
  t.equal(parse({ ...granted(['[::1]:443']), headers: [rule(['::1', '[::1]'])] }), 'accepted')
  t.equal(parse({ ...granted(['::1']), headers: [rule(['::2'])] }),
    'proxy.json: /headers/0/set/Authorization uses the secret "gh" for "::2", a host its /secrets/gh/hosts does not grant')
  for (const written of ['{{SECRET:gh}}', '{{ secret:gh }}', '{secret:gh}', '{{secret:gh}', 'Bearer {{secret:gh}} {{Secret:gh}}']) {
    t.equal(parse({ ...granted(['*']), headers: [{ hosts: ['a.example'], set: { Authorization: written } }] }),
      'proxy.json: /headers/0/set/Authorization has a secret reference that is not written {{secret:NAME}} (lower case, no spaces, NAME as in /secrets): it would be sent as it is', written)
  }
  t.equal(parse({ ...granted(['*']), headers: [{ hosts: ['a.example'], setResponse: { 'X-Echo': '{{secret:gh}}' } }] }),
    'proxy.json: /headers/0/setResponse/X-Echo refers to a secret: secrets are put into requests only (a response header would hand the value to the client)')
  t.match(parse({ secrets: { gh: { env: 'GH', file: 'f', hosts: ['a'] } } }), /\/secrets\/gh: give exactly one of "env" .* and "file"/)
  t.match(parse({ secrets: { gh: { hosts: ['a'] } } }), /\/secrets\/gh: give exactly one of/)
  t.equal(parse({ secrets: { gh: { env: 'GH', hosts: ['a'], value: 'x' } } }), 'proxy.json: /secrets/gh: unknown key "value"', 'a value written in the file is refused')
  t.match(parse({ secrets: { gh: { file: 'token', hosts: ['a'] } } }), 'accepted')
  t.match(parse({ interception: undefined, secrets: { gh: { env: 'GH', hosts: ['a'] } } }), /^proxy\.json: \/secrets: secrets are sent inside intercepted tunnels only: add the "interception" key/)
  t.match(parse({ secrets: { gh: { env: 'GH', hosts: ['a'], placeholder: 'short' } } }), /^proxy\.json: \/secrets\/gh\/placeholder must be 8 to 128 letters/)
  t.equal(parse({ secrets: { gh: { env: 'GH', hosts: ['a'], placeholder: 'PLACEHOLDER_GITHUB' } } }), 'accepted')
  const resolved = parseConfig({ ...base, secrets: { gh: { file: 'token', hosts: ['a'] } } }, 'proxy.json', '/etc/proxy')
  t.equal(resolved.secrets?.gh?.file, '/etc/proxy/token', 'file paths resolve against the configuration file\'s folder')
})

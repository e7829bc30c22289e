import { test } from 'tap'
import Fastify from 'fastify'
import { pbkdf2 } from 'node:crypto'
import { chmodSync, mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ProxyAgent, request } from 'undici'
import { listeningUrls, printed, runBin } from './helpers/cli-bin'
import { LOOPBACK_ORIGINS, portOf } from './helpers/cli-server'
import { startOrigin } from './helpers/servers'
import { startTcpDestination, echoesThrough } from './helpers/tcp-destination'
import { basic, openTunnel, rawExchange } from './helpers/raw-client'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startTlsOrigin } from './helpers/intercepting-proxy'
import { parseConfig, splitRestartKeys, watchConfiguration } from './helpers/internals'
import { capturedLog } from './helpers/captured-log'
import { eventually } from './helpers/eventually'

function get (proxyPort: number, url: string, user: string, password: string): Promise<{ status: number, text: string }> {
  return rawExchange(proxyPort, `GET ${url} HTTP/1.1\r\nHost: ${new URL(url).host}\r\nProxy-Authorization: ${basic(user, password)}\r\nConnection: close\r\n\r\n`)
}

const curl = promisify(execFile)

const base = { listen: [{ host: '127.0.0.1', port: 0 }], destinations: LOOPBACK_ORIGINS, log: { level: 'info' } }

test('bin reload (SIGHUP): new users and destinations apply to new requests at once; a removed user\'s open tunnel is closed, a kept user\'s goes on; a key that needs a restart is named', async (t) => {
  const origin = await startOrigin(t)
  const destination = await startTcpDestination(t)
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({ ...base, users: { alice: 'pw-a', carol: 'pw-c' } }))
  const bin = runBin(t, ['--config', file])
  const port = portOf((await listeningUrls(bin))[0] ?? '')
  const tunnel = await openTunnel(port, `127.0.0.1:${destination.port}`, { 'Proxy-Authorization': basic('carol', 'pw-c') })
  t.teardown(() => { tunnel.socket.destroy() })
  t.equal(tunnel.status, 200)
  const upstream = await destination.nextConnection()
  const removed = await openTunnel(port, `127.0.0.1:${destination.port}`, { 'Proxy-Authorization': basic('alice', 'pw-a') })
  t.teardown(() => { removed.socket.destroy() })
  t.equal(removed.status, 200)
  const removedUpstream = await destination.nextConnection()
  const removedClosed = new Promise<void>((resolve) => removed.socket.once('close', () => resolve()))
  const removedUpstreamEnded = new Promise<void>((resolve) => removedUpstream.once('end', () => resolve()))
  removedUpstream.resume()

  writeFileSync(file, JSON.stringify({ ...base, listen: [{ host: '127.0.0.1', port: 1 }], users: { bob: 'pw-b', carol: 'pw-c' }, destinations: { ...LOOPBACK_ORIGINS, deniedHosts: ['localhost'] } }))
  bin.child.kill('SIGHUP')
  await printed(bin, /"msg":"configuration reloaded"/)
  const [restart] = await printed(bin, /configuration key \\"listen\\" changed: restart the proxy to apply it/)
  t.match(restart, /"level":40/, 'the restart-only key is a warning')
  t.equal((await get(port, `http://127.0.0.1:${origin.port}/a`, 'alice', 'pw-a')).status, 407, 'the removed user is refused')
  t.equal((await get(port, `http://127.0.0.1:${origin.port}/b`, 'bob', 'pw-b')).status, 200, 'the new user is accepted')
  t.equal((await get(port, `http://localhost:${origin.port}/c`, 'bob', 'pw-b')).status, 403, 'the new destinations apply')
  await echoesThrough(tunnel.socket, upstream, 'ping')
  t.pass('the tunnel of a user the reload kept still relays')
  await removedClosed
  await removedUpstreamEnded
  t.pass('the removed user\'s tunnel was closed, both sides')
})

test('bin reload: a file that fails validation changes nothing: one error line, the process keeps serving with the old configuration', async (t) => {
  const origin = await startOrigin(t)
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({ ...base, users: { alice: 'pw-a' } }))
  const bin = runBin(t, ['--config', file])
  const port = portOf((await listeningUrls(bin))[0] ?? '')
  const broken = [
    ['{ "users": ', /not valid JSON/],
    [JSON.stringify({ ...base, users: { bob: 'pw-b' }, limits: { maxConcurrentTunnels: -1 } }), /\/limits\/maxConcurrentTunnels must be/],
    [JSON.stringify({ ...base, users: { bob: 'pw-b' }, interception: { hosts: ['a.example'] }, secrets: { api: { env: 'FFP_TEST_NOT_SET', hosts: ['a.example'] } } }), /\/secrets\/api: the environment variable FFP_TEST_NOT_SET is not set/]
  ] as const
  for (const [index, [text, reason]] of broken.entries()) {
    writeFileSync(file, text)
    bin.child.kill('SIGHUP')
    const lines = await printed(bin, /configuration reload failed, the previous configuration stays/, index + 1)
    t.match(lines[index], reason)
    t.match(lines[index], /"level":50/)
    t.equal((await get(port, `http://127.0.0.1:${origin.port}/x${index}`, 'alice', 'pw-a')).status, 200, 'the old users still work')
    t.equal((await get(port, `http://127.0.0.1:${origin.port}/y${index}`, 'bob', 'pw-b')).status, 407, 'the new ones never applied')
  }
  t.notOk(bin.stdout().includes('configuration reloaded'))
  t.equal(bin.child.exitCode, null, 'the process is still running')
})

test('bin reload without a signal: a ConfigMap-style symlink swap of the file and a rewritten secret file are picked up', async (t) => {
  const origin = await startOrigin(t)
  const dir = t.testdir()
  const version = (name: string, config: object): void => {
    mkdirSync(join(dir, name))
    writeFileSync(join(dir, name, 'proxy.json'), JSON.stringify(config))
  }
  const secretFile = join(dir, 'token')
  writeFileSync(secretFile, 'first-token-value-0001\n')
  chmodSync(secretFile, 0o600)
  const config = { ...base, users: { alice: 'pw-a' }, interception: { hosts: ['never.example'] }, secrets: { api: { file: secretFile, hosts: ['secure.example'] } } }
  version('..2026_11_25_00_00_01', config)
  symlinkSync('..2026_11_25_00_00_01', join(dir, '..data'))
  symlinkSync(join('..data', 'proxy.json'), join(dir, 'proxy.json'))
  const bin = runBin(t, ['--config', join(dir, 'proxy.json')])
  const port = portOf((await listeningUrls(bin))[0] ?? '')

  version('..2026_11_25_00_00_02', { ...config, users: { carol: 'pw-c' } })
  symlinkSync('..2026_11_25_00_00_02', join(dir, '..data_tmp'))
  renameSync(join(dir, '..data_tmp'), join(dir, '..data'))
  await printed(bin, /"reason":"file changed".*"msg":"configuration reloaded"/)
  t.equal((await get(port, `http://127.0.0.1:${origin.port}/a`, 'carol', 'pw-c')).status, 200, 'the swapped file is in force')
  t.equal((await get(port, `http://127.0.0.1:${origin.port}/b`, 'alice', 'pw-a')).status, 407)

  writeFileSync(secretFile, 'second-token-value-0002\n')
  await printed(bin, /"reason":"file changed".*"msg":"configuration reloaded"/, 2)
  t.notOk(bin.stdout().includes('token-value'), 'no secret value in any line')
})

test('bin reload with workers: SIGHUP to the first process reloads every worker', async (t) => {
  const origin = await startOrigin(t)
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({ ...base, workers: 2, users: { alice: 'pw-a' } }))
  const bin = runBin(t, ['--config', file])
  const port = portOf((await listeningUrls(bin))[0] ?? '')
  writeFileSync(file, JSON.stringify({ ...base, workers: 2, users: { bob: 'pw-b' } }))
  bin.child.kill('SIGHUP')
  // Each worker also watches the file: the signal's own reloads are the ones with reason SIGHUP.
  const lines = await printed(bin, /"reason":"SIGHUP".*"msg":"configuration reloaded"/, 2)
  t.equal(new Set(lines.map((line) => /"pid":(\d+)/.exec(line)?.[1])).size, 2, 'both workers reloaded on the signal')
  const statuses = await Promise.all(Array.from({ length: 8 }, async (_, i) => (await get(port, `http://127.0.0.1:${origin.port}/w${i}`, 'bob', 'pw-b')).status))
  t.same(statuses, Array(8).fill(200), 'every connection, whichever worker took it, has the new users')
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
})

test('bin reload under load: 400 requests over 32 connections while the file is reloaded 5 times: nothing dropped', async (t) => {
  const origin = await startOrigin(t)
  const file = join(t.testdir(), 'proxy.json')
  const write = (n: number): void => writeFileSync(file, JSON.stringify({ ...base, users: { alice: 'pw-a', [`extra-${n}`]: 'x' } }))
  write(0)
  const bin = runBin(t, ['--config', file])
  const proxy = `http://127.0.0.1:${portOf((await listeningUrls(bin))[0] ?? '')}`
  const agent = new ProxyAgent({ uri: proxy, token: basic('alice', 'pw-a'), connections: 32 })
  t.teardown(() => agent.close())
  const load = Promise.all(Array.from({ length: 400 }, async (_, i) => {
    const response = await request(`http://127.0.0.1:${origin.port}/l${i}`, { dispatcher: agent })
    await response.body.text()
    return response.statusCode
  }))
  for (let n = 1; n <= 5; n++) {
    write(n)
    bin.child.kill('SIGHUP')
    await printed(bin, /"msg":"configuration reloaded"/, n)
  }
  const statuses = await load
  t.same(statuses.filter((status) => status !== 200), [])
  t.equal(origin.requests.length, 400)
})

test('reload watcher: a file changed right after watching starts (before any poll) is still picked up', async (t) => {
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({ ...base, users: { alice: 'pw-a' } }))
  const read = (): ReturnType<typeof parseConfig> => parseConfig(JSON.parse(readFileSync(file, 'utf8')), 'proxy.json', t.testdirName)
  let current = read()
  const applied: Array<string[]> = []
  const log = capturedLog()
  // Keep libuv's thread pool (4 threads) busy for a while, as a loaded process's may be: a first
  // look taken on it (fs.watchFile's) then comes after the change below.
  const busy = Array.from({ length: 4 }, () => new Promise<void>((resolve) => pbkdf2('x', 'y', 400_000, 32, 'sha256', () => resolve())))
  const stop = watchConfiguration({ path: file, read }, {
    current: () => current,
    apply: (next) => { current = next; applied.push(Object.keys(next.users ?? {})) }
  }, Fastify({ logger: log.logger }).log)
  t.teardown(stop)
  // Same tick as the start: fs.watchFile would have taken this version as its starting point.
  writeFileSync(file, JSON.stringify({ ...base, users: { carol: 'pw-c', dave: 'pw-d' } }))
  await Promise.all(busy)
  await eventually(() => applied.length === 1, 5000)
  t.same(applied, [['carol', 'dave']])
  t.match(log.lines().join('\n'), /"reason":"file changed".*"msg":"configuration reloaded"/)
})

test('reload: which keys apply at once and which need a restart (kept at their current value)', async (t) => {
  const current = parseConfig({ ...base, users: { a: 'x' }, interception: { hosts: ['a.example'], ca: { cert: 'ca.pem', key: 'ca.key' } }, limits: { firstByteTimeout: 5000, maxConcurrentTunnels: 10 } }, 'proxy.json', '/etc/proxy')
  const next = parseConfig({ ...base, listen: [{ host: '127.0.0.1', port: 9 }], users: { b: 'y' }, interception: { hosts: ['b.example'], ca: { cert: 'other.pem', key: 'ca.key' } }, limits: { firstByteTimeout: 1000, maxConcurrentTunnels: 20 }, workers: 2 }, 'proxy.json', '/etc/proxy')
  const { effective, restartNeeded } = splitRestartKeys(current, next)
  t.same(restartNeeded.sort(), ['interception.ca', 'limits.firstByteTimeout', 'listen', 'workers'])
  t.same(effective.listen, current.listen)
  t.equal(effective.workers, current.workers)
  t.same(effective.interception, { ...current.interception, hosts: ['b.example'] }, 'interception hosts apply, its CA does not')
  t.same(effective.limits, { firstByteTimeout: 5000, maxConcurrentTunnels: 20 })
  t.same(effective.users, { b: 'y' })
  const withoutInterception = splitRestartKeys(current, parseConfig({ ...base, users: { a: 'x' } }, 'proxy.json', '/etc/proxy'))
  t.ok(withoutInterception.restartNeeded.includes('interception'), 'turning interception off needs a restart')
  t.throws(() => splitRestartKeys(current, parseConfig({ ...base, users: {} }, 'proxy.json', '/etc/proxy')), /^\/users: a reload cannot remove every user \(that would open the proxy\); nothing was applied/, 'users: {} is refused whole: a reload never opens the proxy')
  t.throws(() => splitRestartKeys(current, parseConfig({ ...base }, 'proxy.json', '/etc/proxy')), /a reload cannot remove every user/, 'nor does a file without users')
  const open = parseConfig({ ...base }, 'proxy.json', '/etc/proxy')
  t.throws(() => splitRestartKeys(open, current), /^\/users: a reload cannot turn authentication on; nothing was applied/)
})

test('bin reload: a file the plugin refuses after the checks of the file passed (a user\'s host pattern) changes nothing, interception.hosts included: the next tunnel is still opaque', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki, (_req, res) => { res.end('ok') })
  const file = join(t.testdir(), 'proxy.json')
  const config = (hosts: string[], alice: unknown): object => ({
    ...base,
    users: { alice },
    interception: { hosts, ca: { cert: pki.operatorCa.certPath, key: pki.operatorCa.certPath.replace(/\.pem$/, '.key') }, trustedDestinationCa: pki.destinationCa.certPath }
  })
  writeFileSync(file, JSON.stringify(config(['never.example'], 'pw-a')))
  const bin = runBin(t, ['--config', file])
  const proxy = `http://alice:pw-a@127.0.0.1:${portOf((await listeningUrls(bin))[0] ?? '')}`
  // Trusting only the operator CA: an opaque tunnel shows the origin's own certificate and fails.
  const fetchThrough = async (): Promise<string> => await curl('curl', ['-sS', '--proxy', proxy, '--cacert', pki.operatorCa.certPath, `https://127.0.0.1:${origin.port}/`])
    .then((result) => result.stdout, (error: { code?: number }) => `curl exit ${String(error.code)}`)
  t.equal(await fetchThrough(), 'curl exit 60', 'not intercepted before the reload')
  writeFileSync(file, JSON.stringify(config(['127.0.0.1'], { password: 'pw-a', allowedHosts: ['exa mple'] })))
  bin.child.kill('SIGHUP')
  const [failure] = await printed(bin, /configuration reload failed, the previous configuration stays/)
  t.match(failure, /allowedHosts/)
  t.equal(await fetchThrough(), 'curl exit 60', 'still not intercepted: the refused file\'s interception.hosts never applied')
  t.notOk(bin.stdout().includes('configuration reloaded'))
})

test('bin reload: a changed interception.hosts applies to the next tunnel (curl: opaque before, intercepted after)', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki, (_req, res) => { res.end('ok') })
  const file = join(t.testdir(), 'proxy.json')
  const config = (hosts: string[]): object => ({
    ...base,
    interception: { hosts, ca: { cert: pki.operatorCa.certPath, key: pki.operatorCa.certPath.replace(/\.pem$/, '.key') }, trustedDestinationCa: pki.destinationCa.certPath }
  })
  writeFileSync(file, JSON.stringify(config(['never.example'])))
  const bin = runBin(t, ['--config', file])
  const proxy = `http://127.0.0.1:${portOf((await listeningUrls(bin))[0] ?? '')}`
  // Trusting only the operator CA: an opaque tunnel shows the origin's own certificate and fails.
  const fetchThrough = async (): Promise<string> => await curl('curl', ['-sS', '--proxy', proxy, '--cacert', pki.operatorCa.certPath, `https://127.0.0.1:${origin.port}/`])
    .then((result) => result.stdout, (error: { code?: number }) => `curl exit ${String(error.code)}`)
  t.equal(await fetchThrough(), 'curl exit 60', 'not intercepted: the origin\'s certificate is not trusted')
  writeFileSync(file, JSON.stringify(config(['127.0.0.1'])))
  bin.child.kill('SIGHUP')
  await printed(bin, /"reason":"SIGHUP".*"msg":"configuration reloaded"/)
  t.equal(await fetchThrough(), 'ok', 'intercepted now: the operator CA\'s leaf')
})

import { test, type Test } from 'tap'
import { spawn, execFileSync } from 'node:child_process'
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect, type AddressInfo, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ProxyAgent, request } from 'undici'
import { startOrigin, startProxy } from '../helpers/servers'
import { startTcpDestination, echoesThrough } from '../helpers/tcp-destination'
import { basic, openTunnel, rawExchange } from '../helpers/raw-client'
import { makeInterceptionPki } from '../helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from '../helpers/intercepting-proxy'
import { capturedLog } from '../helpers/captured-log'

/*
 * Chaining to a real Squid (Debian's `squid` package, installed by .ci/run; when it is missing
 * this test fails, it does not skip). Squid listens on loopback, authenticates with Basic through
 * its own basic_ncsa_auth helper, refuses blocked.example by name, and uses no DNS server that
 * exists: every destination here is a loopback IP literal.
 */
const SQUID = '/usr/sbin/squid'
const NCSA_HELPER = '/usr/lib/squid/basic_ncsa_auth'
const STARTUP_MS = 20_000
let started = 0

interface Squid { port: number, url: (credentials?: string) => string, accessLog: () => string[] }

function freePort (): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo
      server.close(() => resolve(port))
    })
  })
}

function acceptsConnections (port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('error', () => resolve(false))
  })
}

/** Starts Squid in the foreground with user `up` / `up-secret`; stopped and its directory removed at teardown. */
async function startSquid (t: Test): Promise<Squid> {
  const directory = mkdtempSync(join(tmpdir(), 'ffp-squid-'))
  // Squid started as root works as the `proxy` user: it must be able to write its logs here.
  chmodSync(directory, 0o777)
  const port = await freePort()
  const hash = execFileSync('openssl', ['passwd', '-apr1', 'up-secret']).toString().trim()
  writeFileSync(join(directory, 'passwd'), `up:${hash}\n`, { mode: 0o644 })
  writeFileSync(join(directory, 'squid.conf'), `http_port 127.0.0.1:${port}
visible_hostname squid-upstream
auth_param basic program ${NCSA_HELPER} ${join(directory, 'passwd')}
auth_param basic children 2
auth_param basic realm upstream
acl authenticated proxy_auth REQUIRED
acl blocked dstdomain blocked.example
http_access deny blocked
http_access allow authenticated
http_access deny all
dns_nameservers 127.0.0.1
cache deny all
cache_mem 8 MB
access_log stdio:${join(directory, 'access.log')} squid
cache_log ${join(directory, 'cache.log')}
cache_store_log none
pid_filename ${join(directory, 'squid.pid')}
coredump_dir ${directory}
pinger_enable off
strip_query_terms off
shutdown_lifetime 0 seconds
`)
  // A service name of its own: Squid names its shared-memory segments (/dev/shm/<name>-cf__*) after
  // it, so concurrent or earlier Squids (a killed one leaves them behind) cannot collide.
  const service = `ffp${process.pid}n${++started}`
  const child = spawn(SQUID, ['-n', service, '-N', '-f', join(directory, 'squid.conf')], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  t.teardown(async () => {
    // SIGTERM makes Squid wait seconds for its helpers; nothing is left to flush (logs are unbuffered).
    child.kill('SIGKILL')
    await exited
    rmSync(directory, { recursive: true, force: true })
    for (const name of readdirSync('/dev/shm')) if (name.startsWith(`${service}-`)) rmSync(join('/dev/shm', name), { force: true })
  })
  const deadline = Date.now() + STARTUP_MS
  while (!(await acceptsConnections(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      let log = ''
      try { log = readFileSync(join(directory, 'cache.log'), 'utf8') } catch {}
      throw new Error(`Squid did not start on ${port}: ${output}\n${log}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return {
    port,
    url: (credentials = 'up:up-secret') => `http://${credentials === '' ? '' : `${credentials}@`}127.0.0.1:${port}`,
    // Squid's native format: time elapsed client code/status bytes method URL user hierarchy type.
    accessLog: () => {
      try { return readFileSync(join(directory, 'access.log'), 'utf8').split('\n').filter((line) => line !== '') } catch { return [] }
    }
  }
}

/** The method, URL, user and status of each line of Squid's access log. */
function logged (squid: Squid): Array<{ method: string, url: string, user: string, status: string }> {
  return squid.accessLog().map((line) => {
    const fields = line.trim().split(/\s+/)
    return { status: fields[3]?.split('/')[1] ?? '', method: fields[5] ?? '', url: fields[6] ?? '', user: fields[7] ?? '' }
  }).filter(({ url }) => !url.startsWith('error:')) // the start-up probe's connections, closed before a request
}

/** Squid appends its access log line when the transaction ends; wait for the expected count. */
async function loggedWhen (squid: Squid, count: number): Promise<ReturnType<typeof logged>> {
  const deadline = Date.now() + 10_000
  while (logged(squid).length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
  return logged(squid)
}

function get (port: number, url: string, headers: Record<string, string> = {}): ReturnType<typeof rawExchange> {
  const lines = [`GET ${url} HTTP/1.1`, `Host: ${new URL(url).host}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), 'Connection: close']
  return rawExchange(port, `${lines.join('\r\n')}\r\n\r\n`)
}

test('Squid upstream 1: an opaque CONNECT goes through Squid with the upstream\'s credentials; bytes flow both ways', async (t) => {
  const squid = await startSquid(t)
  const destination = await startTcpDestination(t)
  const front = await startProxy(t, { auth: { users: { client: 'client-pw' } }, upstreamProxies: [{ hosts: ['*'], url: squid.url() }] })
  const tunnel = await openTunnel(front.port, `127.0.0.1:${destination.port}`, { 'Proxy-Authorization': basic('client', 'client-pw') })
  t.teardown(() => { tunnel.socket.destroy() })
  t.equal(tunnel.status, 200)
  await echoesThrough(tunnel.socket, await destination.nextConnection(), 'through ours and Squid')
  tunnel.socket.destroy()
  const lines = await loggedWhen(squid, 1)
  t.same(lines.map(({ method, url, user }) => ({ method, url, user })), [{ method: 'CONNECT', url: `127.0.0.1:${destination.port}`, user: 'up' }], 'Squid authenticated the upstream user, not the client')
})

test('Squid upstream 2: http:// goes to Squid in absolute form with its credentials, never the client\'s; both hops add Via', async (t) => {
  const squid = await startSquid(t)
  const origin = await startOrigin(t)
  const front = await startProxy(t, { auth: { users: { client: 'client-pw' } }, upstreamProxies: [{ hosts: ['*'], url: squid.url() }] })
  const answer = await get(front.port, `http://127.0.0.1:${origin.port}/page?x=1`, { 'Proxy-Authorization': basic('client', 'client-pw'), Connection: 'close, x-hop', 'X-Hop': 'dropped', 'X-Kept': 'kept' })
  t.equal(answer.status, 200)
  const seen = origin.requests[0]
  t.equal(seen?.url, '/page?x=1')
  t.equal(seen?.headers['proxy-authorization'], undefined, 'no Proxy-Authorization reaches the origin')
  t.equal(seen?.headers['x-hop'], undefined)
  t.equal(seen?.headers['x-kept'], 'kept')
  t.match(seen?.headers.via, /^1\.1 fastify-forward-proxy, 1\.1 squid-upstream \(squid\/[\d.]+\)$/)
  t.match(answer.text, /\r\nvia: 1\.1 squid-upstream \(squid\/[\d.]+\)\r\n/i)
  t.match(answer.text, /\r\nvia: 1\.1 fastify-forward-proxy\r\n/i)
  const lines = await loggedWhen(squid, 1)
  t.same(lines.map(({ method, url, user }) => ({ method, url, user })), [{ method: 'GET', url: `http://127.0.0.1:${origin.port}/page?x=1`, user: 'up' }])
})

test('Squid upstream 3: intercepted requests reach the origin over validated TLS inside one CONNECT through Squid, reused', async (t) => {
  const squid = await startSquid(t)
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki, (_req, res) => { res.end('ok') })
  const front = await startInterceptingProxy(t, pki, {
    proxy: { upstreamProxies: [{ hosts: ['127.0.0.1'], url: squid.url() }] },
    interception: interceptAll(pki)
  })
  const agent = new ProxyAgent({ uri: front.url, requestTls: { ca: pki.operatorCa.cert } })
  let closed = false
  t.teardown(async () => { if (!closed) await agent.close() })
  for (const path of ['/1', '/2', '/3']) {
    const response = await request(`https://127.0.0.1:${origin.port}${path}`, { dispatcher: agent })
    t.equal(await response.body.text(), 'ok')
  }
  t.same(origin.requests.map((seen) => seen.url), ['/1', '/2', '/3'])
  // Squid logs a CONNECT when the tunnel ends: closing the front proxy ends its pooled connection.
  closed = true
  await agent.close()
  await front.app.close()
  const lines = await loggedWhen(squid, 1)
  t.same(lines.map(({ method, url, user }) => ({ method, url, user })), [{ method: 'CONNECT', url: `127.0.0.1:${origin.port}`, user: 'up' }], 'one CONNECT through Squid for three requests')
})

test('Squid upstream 4: Squid\'s 407 and 403 become 502 with next-hop naming Squid, never its credentials', async (t) => {
  const squid = await startSquid(t)
  const log = capturedLog()
  const hop = `; next-hop="127\\.0\\.0\\.1:${squid.port}"`
  const wrong = await startProxy(t, { upstreamProxies: [{ hosts: ['*'], url: squid.url('up:wrong-secret') }] }, undefined, { logger: log.logger })
  const tunnel = await openTunnel(wrong.port, '127.0.0.1:9')
  t.teardown(() => { tunnel.socket.destroy() })
  t.equal(tunnel.status, 502)
  t.match(tunnel.head, new RegExp(`error=destination_unavailable; details="upstream proxy answered 407"${hop}`))
  const forwarded = await get(wrong.port, 'http://127.0.0.1:9/')
  t.equal(forwarded.status, 502)
  t.match(forwarded.text, new RegExp(`error=destination_unavailable; details="upstream proxy answered 407"${hop}`))
  t.notOk(tunnel.head.includes('wrong-secret') || forwarded.text.includes('wrong-secret'), 'no credentials in the answers')
  const right = await startProxy(t, { upstreamProxies: [{ hosts: ['*'], url: squid.url() }] }, undefined, { logger: log.logger })
  const blocked = await openTunnel(right.port, 'blocked.example:443')
  t.teardown(() => { blocked.socket.destroy() })
  t.equal(blocked.status, 502)
  t.match(blocked.head, new RegExp(`error=destination_unavailable; details="upstream proxy answered 403"${hop}`))
  const text = log.lines().join('\n')
  t.notOk(text.includes('wrong-secret') || text.includes('up-secret'), 'no credentials in any log line')
})

test('Squid upstream "environment": https_proxy names Squid for tunnels', async (t) => {
  const squid = await startSquid(t)
  const destination = await startTcpDestination(t)
  const saved = process.env.https_proxy
  process.env.https_proxy = squid.url()
  t.teardown(() => { if (saved === undefined) delete process.env.https_proxy; else process.env.https_proxy = saved })
  const front = await startProxy(t, { upstreamProxies: 'environment' })
  const tunnel = await openTunnel(front.port, `127.0.0.1:${destination.port}`)
  t.teardown(() => { tunnel.socket.destroy() })
  t.equal(tunnel.status, 200)
  await echoesThrough(tunnel.socket, await destination.nextConnection(), 'through Squid from the environment')
})

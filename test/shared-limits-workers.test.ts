import { test, type Test } from 'tap'
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { listeningUrls, runBin, type BinProcess } from './helpers/cli-bin'
import { startOrigin } from './helpers/servers'
import { eventually } from './helpers/eventually'
import { childPids } from './helpers/cli-workers'
import { openTunnel, openTunnelOnceAdmitted, type OpenTunnel } from './helpers/raw-client'
import { startTcpDestination } from './helpers/tcp-destination'

const AUTH = `Basic ${Buffer.from('alice:alice-password').toString('base64')}`
const WRONG = `Basic ${Buffer.from('alice:wrong').toString('base64')}`

/** An absolute-form GET on a new connection (the cluster hands each to the next worker), or on `agent`'s: its status and headers. */
function exchange (proxy: URL, target: string, authorization: string, agent: Agent | false = false): Promise<{ status: number, headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    httpRequest({ host: proxy.hostname, port: proxy.port, path: target, agent, headers: { 'proxy-authorization': authorization } }, (res) => {
      res.resume()
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }))
    }).on('error', reject).end()
  })
}

/** The status of {@link exchange}'s GET. */
async function get (proxy: URL, target: string, authorization: string, agent: Agent | false = false): Promise<number> {
  return (await exchange(proxy, target, authorization, agent)).status
}

/** The pids of the workers that wrote an access line with `status`. */
function pidsAnswering (bin: BinProcess, status: number): Set<number> {
  const pids = new Set<number>()
  for (const line of bin.stdout().split('\n')) {
    if (!line.startsWith('{')) continue
    const entry = JSON.parse(line) as { pid: number, access?: { status?: number } }
    if (entry.access?.status === status) pids.add(entry.pid)
  }
  return pids
}

/** True when process `pid` has a TCP connection to local port `port` (Linux /proc). */
function holdsConnectionTo (pid: number, port: number): boolean {
  const inodes = new Set<string>()
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1]
      if (inode !== undefined) inodes.add(inode)
    } catch {}
  }
  return readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1).some((line) => {
    const fields = line.trim().split(/\s+/)
    return fields.length > 9 && parseInt(fields[2]?.split(':')[1] ?? '', 16) === port && inodes.has(fields[9] ?? '')
  })
}

function startTwoWorkers (t: Test, user: object, extra: object = {}): BinProcess {
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    workers: 2,
    users: { alice: { password: 'alice-password', ...user } },
    destinations: { allowedPorts: '*', allowedNetworks: ['127.0.0.1/32'] },
    log: { level: 'info' },
    ...extra
  }))
  return runBin(t, ['--config', file])
}

test('workers without a store: far from the limit a worker counts from places it took ahead, and one that runs out is given the other\'s unused places (exactly 100 of 126 answered)', async (t) => {
  const origin = await startOrigin(t)
  const bin = startTwoWorkers(t, { requestsPerMinute: 100 })
  const proxy = new URL((await listeningUrls(bin))[0] ?? '')
  // One kept-alive connection each: the cluster hands consecutive connections to alternate workers.
  const [first, second] = [new Agent({ keepAlive: true, maxSockets: 1 }), new Agent({ keepAlive: true, maxSockets: 1 })]
  t.teardown(() => { first.destroy(); second.destroy() })
  const target = `http://127.0.0.1:${origin.port}/`
  t.equal(await get(proxy, target, AUTH, first), 200, 'the first worker takes places ahead of its first request')
  const secondStatuses: number[] = []
  for (let i = 0; i < 120; i++) secondStatuses.push(await get(proxy, target, AUTH, second))
  t.same(secondStatuses.slice(0, 99), Array(99).fill(200), 'the other worker is answered for every place but the first request\'s, the first worker\'s unused ones included')
  t.same(secondStatuses.slice(99), Array(21).fill(429), 'then refused')
  for (let i = 0; i < 5; i++) t.equal(await get(proxy, target, AUTH, first), 429, 'the first worker gave its places away')
  await eventually(() => pidsAnswering(bin, 200).size >= 2, 5000).catch(() => {})
  t.equal(pidsAnswering(bin, 200).size, 2, 'the two connections were answered by different workers')
})

test('workers without a store: a user\'s requestsPerMinute counts across both workers (30 requests, 10 answered, 20 refused)', async (t) => {
  const origin = await startOrigin(t)
  const bin = startTwoWorkers(t, { requestsPerMinute: 10 }, { metrics: { port: 0 } })
  const proxy = new URL((await listeningUrls(bin))[0] ?? '')
  const metricsUrl = /metrics: (http:\/\/\S+)/.exec(bin.stdout())?.[1] ?? ''
  const statuses: number[] = []
  for (let i = 0; i < 30; i++) statuses.push(await get(proxy, `http://127.0.0.1:${origin.port}/${i}`, AUTH))
  t.equal(statuses.filter((status) => status === 200).length, 10, 'exactly the user\'s 10')
  t.equal(statuses.filter((status) => status === 429).length, 20, 'every other one refused')
  t.same(statuses.slice(0, 10), Array(10).fill(200), 'the first ten are the ones answered')
  await eventually(() => pidsAnswering(bin, 429).size >= 2 && pidsAnswering(bin, 200).size >= 2, 5000).catch(() => {})
  t.equal(pidsAnswering(bin, 200).size, 2, 'both workers answered some')
  t.equal(pidsAnswering(bin, 429).size, 2, 'both workers refused some: neither counted alone')
  const metrics = await (await fetch(metricsUrl)).text()
  t.match(metrics, /\nforward_proxy_requests_total\{forward_proxy_kind="forward"\} 30\n/, '/metrics counts all 30')
  t.match(metrics, /\nforward_proxy_request_outcomes_total\{[^}]*forward_proxy_outcome="refused",forward_proxy_reason="user_rate_limit"\} 20\n/, 'and the 20 refusals')
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
})

test('workers without a store: the authentication lockout counts failures from both workers, and each worker\'s 429 says when the shared window ends', async (t) => {
  const origin = await startOrigin(t)
  const bin = startTwoWorkers(t, {}, { authFailureLimit: { maxFailures: 4, window: 60000 } })
  const proxy = new URL((await listeningUrls(bin))[0] ?? '')
  const target = `http://127.0.0.1:${origin.port}/`
  // Four wrong guesses on four connections: two per worker, so neither alone reaches 4.
  for (let i = 0; i < 4; i++) t.equal(await get(proxy, target, WRONG), 407)
  await eventually(() => pidsAnswering(bin, 407).size >= 2, 5000).catch(() => {})
  t.equal(pidsAnswering(bin, 407).size, 2, 'both workers counted failures')
  // Right credentials now, on both workers: locked out on each.
  for (let i = 0; i < 2; i++) {
    const locked = await exchange(proxy, target, AUTH)
    t.equal(locked.status, 429)
    const retryAfter = Number(locked.headers['retry-after'])
    t.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After inside the 60 s window (${String(locked.headers['retry-after'])})`)
  }
  await eventually(() => pidsAnswering(bin, 429).size >= 2, 5000).catch(() => {})
  t.equal(pidsAnswering(bin, 429).size, 2, 'both workers refused the locked-out client')
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
})

test('workers without a store: a user\'s maxConcurrentTunnels counts across both workers, and a worker killed with tunnels open gives its slots back at once', async (t) => {
  const destination = await startTcpDestination(t)
  const bin = startTwoWorkers(t, { maxConcurrentTunnels: 2 })
  const proxy = new URL((await listeningUrls(bin))[0] ?? '')
  const port = Number(proxy.port)
  const target = `127.0.0.1:${destination.port}`
  const open = (): Promise<OpenTunnel> => openTunnel(port, target, { 'Proxy-Authorization': AUTH })
  // Two tunnels on two connections: the cluster hands them to the two workers in turn.
  const tunnels = [await open(), await open()]
  t.same(tunnels.map((tunnel) => tunnel.status), [200, 200])
  for (let i = 0; i < 2; i++) {
    const refused = await open()
    t.equal(refused.status, 429, 'a third is refused on either worker')
    refused.socket.destroy()
  }
  // SIGKILL a worker holding a tunnel: it gives nothing back itself; the first process sees it exit.
  const victim = childPids(bin.child.pid ?? 0).find((pid) => holdsConnectionTo(pid, destination.port))
  t.ok(victim, 'a worker holds a tunnel to the destination')
  const closed = tunnels.map((tunnel) => new Promise<void>((resolve) => tunnel.socket.once('close', () => resolve())))
  process.kill(victim ?? 0, 'SIGKILL')
  await Promise.race(closed)
  // Node's cluster may have handed the next connection to the worker that died: it is never
  // answered, so each attempt gets a second before the next.
  const reopened = await openTunnelOnceAdmitted(port, target, { 'Proxy-Authorization': AUTH }, 10_000)
  t.equal(reopened.status, 200, 'a tunnel opens again once the killed worker\'s slot is back')
  reopened.socket.destroy()
  for (const tunnel of tunnels) tunnel.socket.destroy()
  bin.child.kill('SIGTERM')
  await bin.exited
})

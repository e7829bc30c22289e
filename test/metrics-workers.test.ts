import { test, type Test } from 'tap'
import { get } from 'node:http'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { request } from 'undici'
import type { Attributes } from '@opentelemetry/api'
import { DataPointType, type MetricData, type ScopeMetrics } from '@opentelemetry/sdk-metrics'
import { listeningUrls, runBin, type BinProcess } from './helpers/cli-bin'
import { childPids } from './helpers/cli-workers'
import { startOrigin } from './helpers/servers'
import { basic, openTunnel } from './helpers/raw-client'
import { once, startTcpDestination } from './helpers/tcp-destination'
import { LOOPBACK_ORIGINS, startConfiguredServer } from './helpers/cli-server'
import { mergeWorkerMetrics, WORKER_COLLECT_TIMEOUT } from './helpers/internals'

const AUTH = basic('alice', 's3cret')

/** One access line of the bin's JSON log. */
interface AccessLine { pid: number, kind: string, destination: string | null }

function accessLines (bin: BinProcess): AccessLine[] {
  return bin.stdout().split('\n').flatMap((line) => {
    if (!line.startsWith('{"level"')) return []
    const entry = JSON.parse(line) as { pid: number, access?: { kind: string, destination: string | null } }
    return entry.access === undefined ? [] : [{ pid: entry.pid, kind: entry.access.kind, destination: entry.access.destination }]
  })
}

/** Resolves once `predicate` holds for the access lines, checked on each chunk of output. */
function accessLinesWhere (bin: BinProcess, predicate: (lines: AccessLine[]) => boolean): Promise<AccessLine[]> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      const lines = accessLines(bin)
      if (!predicate(lines)) return
      bin.child.stdout.removeListener('data', check)
      resolve(lines)
    }
    bin.child.stdout.on('data', check)
    bin.exited.then((code) => reject(new Error(`the bin exited (${String(code)})`)), reject)
    check()
  })
}

/** Spawns the bin with two workers, a user, loopback destinations, a metrics listener and info logs. */
async function startBin (t: Test, metricsPort = 0): Promise<{ bin: BinProcess, proxy: URL, metricsUrl: string }> {
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    workers: 2,
    users: { alice: 's3cret' },
    destinations: LOOPBACK_ORIGINS,
    metrics: { host: '127.0.0.1', port: metricsPort },
    log: { level: 'info' }
  }))
  const bin = runBin(t, ['--config', file])
  const [url] = await listeningUrls(bin)
  const metricsUrl = /metrics: (\S+)/.exec(bin.stdout())?.[1] ?? ''
  return { bin, proxy: new URL(url ?? ''), metricsUrl }
}

/** An authenticated absolute-form GET through the proxy on a new connection; resolves with its status. */
function forward (proxy: URL, target: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get({ host: proxy.hostname, port: proxy.port, path: target, agent: false, headers: { 'proxy-authorization': AUTH } }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    }).on('error', reject)
  })
}

/** The value of one series line (`name{labels} value`), or undefined when absent. */
function series (text: string, line: string): number | undefined {
  const found = text.split('\n').find((candidate) => candidate.startsWith(`${line} `))
  return found === undefined ? undefined : Number(found.slice(line.length + 1))
}

/** The sum of every series of `name` (`name{...} value`), whatever its labels. */
function total (text: string, name: string): number {
  return text.split('\n').filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `)).reduce((sum, line) => sum + Number(line.split(' ').pop()), 0)
}

async function scrape (url: string): Promise<string> {
  const answer = await request(url)
  if (answer.statusCode !== 200) throw new Error(`scrape answered ${answer.statusCode}`)
  return await answer.body.text()
}

test('bin workers: GET /metrics answers the sum over both workers (counters, histograms, up-down counters), whichever worker is scraped', async (t) => {
  const origin = await startOrigin(t, (_req, res) => res.end('hello'))
  const holder = await startTcpDestination(t)
  const { bin, proxy, metricsUrl } = await startBin(t)
  t.match(metricsUrl, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/, 'the summary names the metrics endpoint')
  t.equal(childPids(bin.child.pid ?? 0).length, 2, 'two worker processes')

  // New connections each: the cluster hands them to the workers in turn.
  const requests = 30
  for (let i = 0; i < requests; i++) t.equal(await forward(proxy, `http://127.0.0.1:${origin.port}/${i}`), 200)
  const closedTunnels = 6
  for (let i = 0; i < closedTunnels; i++) {
    const tunnel = await openTunnel(Number(proxy.port), `127.0.0.1:${origin.port}`, { 'Proxy-Authorization': AUTH })
    t.equal(tunnel.status, 200)
    tunnel.socket.end('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')
    tunnel.socket.resume()
    await once(tunnel.socket, 'close')
  }
  const heldTunnels = 4
  const held: Socket[] = []
  const upstreams: Socket[] = []
  for (let i = 0; i < heldTunnels; i++) {
    const tunnel = await openTunnel(Number(proxy.port), `127.0.0.1:${holder.port}`, { 'Proxy-Authorization': AUTH })
    t.equal(tunnel.status, 200)
    held.push(tunnel.socket)
    upstreams.push(await holder.nextConnection())
  }
  const lines = await accessLinesWhere(bin, (all) => all.filter((line) => line.kind === 'forward').length === requests &&
    all.filter((line) => line.kind === 'tunnel').length === closedTunnels)
  const forwarders = new Set(lines.filter((line) => line.kind === 'forward').map((line) => line.pid))
  t.equal(forwarders.size, 2, `both workers forwarded requests (pids ${[...forwarders].join(', ')})`)

  const first = await scrape(metricsUrl)
  const second = await scrape(metricsUrl)
  for (const text of [first, second]) {
    t.equal(series(text, 'forward_proxy_requests_total{forward_proxy_kind="forward"}'), requests, 'every forwarded request, from both workers')
    t.equal(series(text, 'forward_proxy_requests_total{forward_proxy_kind="connect"}'), closedTunnels + heldTunnels)
    t.equal(series(text, 'forward_proxy_request_outcomes_total{forward_proxy_kind="forward",forward_proxy_outcome="answered"}'), requests)
    t.equal(total(text, 'forward_proxy_tunnel_duration_seconds_count'), closedTunnels, 'histogram counts added')
    t.equal(total(text, 'forward_proxy_tunnel_download_size_bytes_count'), closedTunnels)
    t.equal(series(text, 'forward_proxy_tunnel_download_size_bytes_bucket{forward_proxy_tunnel_kind="opaque",network_protocol_version="1.1",le="+Inf"}'), closedTunnels, 'histogram buckets added')
    t.equal(series(text, 'forward_proxy_tunnel_active{forward_proxy_tunnel_kind="opaque",network_protocol_version="1.1"}'), heldTunnels, 'open tunnels of both workers')
    t.equal(series(text, 'forward_proxy_metrics_workers'), 2)
    t.equal(series(text, 'forward_proxy_metrics_workers_reporting'), 2)
    const seriesLines = text.split('\n').filter((line) => line !== '' && !line.startsWith('#')).map((line) => line.slice(0, line.lastIndexOf(' ')))
    t.equal(new Set(seriesLines).size, seriesLines.length, 'no series twice')
  }
  t.equal(total(first, 'forward_proxy_tunnel_download_size_bytes_sum'), total(second, 'forward_proxy_tunnel_download_size_bytes_sum'), 'both scrapes agree')

  for (const socket of held) socket.destroy()
  for (const socket of upstreams) socket.destroy()
  const closed = await accessLinesWhere(bin, (all) => all.filter((line) => line.destination === `127.0.0.1:${holder.port}`).length === heldTunnels)
  const holders = new Set(closed.filter((line) => line.destination === `127.0.0.1:${holder.port}`).map((line) => line.pid))
  t.equal(holders.size, 2, 'the tunnels counted as open were held by both workers')

  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
})

test('bin workers: a worker that does not answer in time is left out of the sum, and the scrape says so', async (t) => {
  const origin = await startOrigin(t, (_req, res) => res.end('hello'))
  const { bin, proxy, metricsUrl } = await startBin(t)
  for (let i = 0; i < 6; i++) t.equal(await forward(proxy, `http://127.0.0.1:${origin.port}/${i}`), 200)
  const lines = await accessLinesWhere(bin, (all) => all.length === 6)
  const [stopped, running] = childPids(bin.child.pid ?? 0)
  const servedByRunning = lines.filter((line) => line.pid === running).length
  t.ok(servedByRunning > 0 && servedByRunning < 6, 'both workers forwarded requests')
  process.kill(stopped ?? 0, 'SIGSTOP')
  t.teardown(() => { try { process.kill(stopped ?? 0, 'SIGCONT') } catch {} })

  // The stopped worker may be handed the first scrape's connection, which then waits; the next
  // goes to the running one.
  let text: string | undefined
  let elapsed = 0
  for (let attempt = 0; attempt < 3 && text === undefined; attempt++) {
    const started = Date.now()
    try {
      const answer = await request(metricsUrl, { headersTimeout: WORKER_COLLECT_TIMEOUT * 3 })
      text = await answer.body.text()
      elapsed = Date.now() - started
    } catch {}
  }
  t.ok(text !== undefined, 'the running worker answered')
  t.ok(elapsed >= WORKER_COLLECT_TIMEOUT - 50, `after waiting for the stopped worker (${elapsed} ms)`)
  t.equal(series(text ?? '', 'forward_proxy_metrics_workers'), 2)
  t.equal(series(text ?? '', 'forward_proxy_metrics_workers_reporting'), 1)
  t.equal(series(text ?? '', 'forward_proxy_requests_total{forward_proxy_kind="forward"}'), servedByRunning, 'the running worker\'s count only')

  process.kill(stopped ?? 0, 'SIGCONT')
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
})

test('bin workers: a metrics port in use stops start-up with the listen error, as with one worker', async (t) => {
  const blocker = createServer()
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => blocker.close(() => resolve())))
  const port = (blocker.address() as AddressInfo).port
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({ listen: [{ host: '127.0.0.1', port: 0 }], workers: 2, metrics: { port } }))
  const bin = runBin(t, ['--config', file])
  t.equal(await bin.exited, 1)
  // A worker's listen goes through the first process, whose error Node words as `bind`.
  t.match(bin.stderr(), new RegExp(`forward-proxy: cannot start: bind EADDRINUSE 127\\.0\\.0\\.1:${port}\n`))
  t.notMatch(bin.stdout(), /listening on/, 'no summary')
})

test('server: with one process the scrape has no workers gauges', async (t) => {
  const server = await startConfiguredServer(t, { listen: [{ host: '127.0.0.1', port: 0 }], metrics: { port: 0 } })
  const text = await scrape(server.metricsUrl ?? '')
  t.notMatch(text, /forward_proxy_metrics_workers/)
})

const scope = { name: 'fastify-forward-proxy', version: '1' }
const descriptor = (name: string): MetricData['descriptor'] => ({ name, description: '', unit: '', valueType: 1 })
const point = <T>(attributes: Attributes, value: T, start = 1): { startTime: [number, number], endTime: [number, number], attributes: Attributes, value: T } =>
  ({ startTime: [start, 0], endTime: [start + 10, 0], attributes, value })
const sum = (name: string, isMonotonic: boolean, points: Array<ReturnType<typeof point<number>>>): MetricData =>
  ({ descriptor: descriptor(name), aggregationTemporality: 1, dataPointType: DataPointType.SUM, isMonotonic, dataPoints: points })
const histogram = (
  boundaries: number[],
  counts: number[],
  total: number
): { buckets: { boundaries: number[], counts: number[] }, sum: number, count: number } =>
  ({ buckets: { boundaries, counts }, sum: total, count: counts.reduce((a, b) => a + b, 0) })
const histogramMetric = (name: string, points: Array<ReturnType<typeof point<ReturnType<typeof histogram>>>>): MetricData =>
  ({ descriptor: descriptor(name), aggregationTemporality: 1, dataPointType: DataPointType.HISTOGRAM, dataPoints: points })
const metricNamed = (merged: ScopeMetrics[], name: string): MetricData | undefined => merged[0]?.metrics.find((metric) => metric.descriptor.name === name)

test('mergeWorkerMetrics: counters and up-down counters add by attribute set, in any key order', async (t) => {
  const a: ScopeMetrics[] = [{ scope, metrics: [sum('requests', true, [point({ kind: 'forward' }, 3), point({ kind: 'connect' }, 1)]), sum('active', false, [point({ k: 'x', v: '1' }, 2)])] }]
  const b: ScopeMetrics[] = [{ scope, metrics: [sum('requests', true, [point({ kind: 'forward' }, 4, 0)]), sum('active', false, [point({ v: '1', k: 'x' }, -1), point({ k: 'y', v: '1' }, 5)])] }]
  const before = JSON.stringify([a, b])
  const merged = mergeWorkerMetrics([a, b])
  t.equal(merged.length, 1, 'one scope')
  t.same(metricNamed(merged, 'requests')?.dataPoints.map((p) => [p.attributes, p.value, p.startTime, p.endTime]),
    [[{ kind: 'forward' }, 7, [0, 0], [11, 0]], [{ kind: 'connect' }, 1, [1, 0], [11, 0]]], 'earliest start, latest end')
  t.same(metricNamed(merged, 'active')?.dataPoints.map((p) => [p.attributes, p.value]), [[{ k: 'x', v: '1' }, 1], [{ k: 'y', v: '1' }, 5]])
  t.equal(JSON.stringify([a, b]), before, 'the inputs are unchanged')
})

test('mergeWorkerMetrics: histograms with the same boundaries add bucket by bucket, with sum and count', async (t) => {
  const a: ScopeMetrics[] = [{ scope, metrics: [histogramMetric('duration', [point({}, histogram([1, 10], [1, 2, 0], 12))])] }]
  const b: ScopeMetrics[] = [{ scope, metrics: [histogramMetric('duration', [point({}, histogram([1, 10], [0, 1, 3], 100))])] }]
  t.same(metricNamed(mergeWorkerMetrics([a, b]), 'duration')?.dataPoints.map((p) => p.value), [{ buckets: { boundaries: [1, 10], counts: [1, 3, 3] }, sum: 112, count: 7 }])
  const other: ScopeMetrics[] = [{ scope, metrics: [histogramMetric('duration', [point({}, histogram([5], [9, 9], 50))])] }]
  t.same(metricNamed(mergeWorkerMetrics([a, other]), 'duration')?.dataPoints.map((p) => p.value), [histogram([1, 10], [1, 2, 0], 12)], 'other boundaries: the first worker\'s point is kept')
})

test('mergeWorkerMetrics: a metric or scope only one worker has is kept; one worker is itself', async (t) => {
  const a: ScopeMetrics[] = [{ scope, metrics: [sum('requests', true, [point({}, 1)])] }]
  const b: ScopeMetrics[] = [{ scope, metrics: [sum('failures', true, [point({}, 2)])] }, { scope: { name: 'other' }, metrics: [sum('x', true, [point({}, 3)])] }]
  const merged = mergeWorkerMetrics([a, b])
  t.same(merged.map((s) => [s.scope.name, s.metrics.map((m) => m.descriptor.name)]), [['fastify-forward-proxy', ['requests', 'failures']], ['other', ['x']]])
  t.same(mergeWorkerMetrics([a]), a)
  t.same(mergeWorkerMetrics([]), [])
})

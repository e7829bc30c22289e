// The proxy's CPU per answered CONNECT, in the same run: the floor (bench/floor-connect-proxy.mjs:
// Node's HTTP server, a 'connect' listener, dial and pipe()), the same through Fastify's routing
// (bench/floor-fastify-connect.mjs: one CONNECT route, no hooks), the plugin in a minimal Fastify app
// (bench/proxy-server.mjs), the bin (bench/compare/peers.mjs's `ours`) and Squid (where installed).
// 32 clients open a connection, send CONNECT to the origin's plain port, read the 200 and close
// (bench/compare/connect-client.mjs, in its own process), for CONNECT_COST_SECONDS (4) s per run,
// CONNECT_COST_ROUNDS (3) rounds after a 1 s warm-up of each, the order rotating; prints each run
// and the medians. CONNECT_COST_PEERS narrows the paths (floor,fastify-floor,plugin,ours,squid).
//
//   npm run bench:connect            # builds dist/, then node bench/connect-cost.mjs
//
// The per-request suite (BENCH_SUITE=per-request npm run bench:compare) runs the same
// measurement beside its other scenarios, with the full bin and Squid authenticating.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { makeLeaf } from './pki.mjs'
import { connectLoad } from './compare/connect-client.mjs'
import { makeOriginPki, startOrigin, PLAIN_HOST } from './compare/origin.mjs'
import { PEERS, SUITE_PEERS, startPeer } from './compare/peers.mjs'
import { cpuSeconds, stopProcess } from './compare/processes.mjs'
import { median } from './compare/report.mjs'
import { detectTools } from './compare/tools.mjs'

const SECONDS = Number(process.env.CONNECT_COST_SECONDS ?? 4)
const ROUNDS = Number(process.env.CONNECT_COST_ROUNDS ?? 3)
const PARALLEL = 32
const WANTED = (process.env.CONNECT_COST_PEERS ?? 'floor,fastify-floor,plugin,ours,squid').split(',').map((s) => s.trim()).filter(Boolean)
const fixed = (n, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '-')

const directory = mkdtempSync(join(tmpdir(), 'ffp-connect-cost-'))
const processes = []
try {
  const originPki = makeOriginPki(directory)
  const pki = { ...originPki, proxy: makeLeaf(directory, 'proxy', originPki.destinationCa, [PLAIN_HOST]) }
  const tools = detectTools().found
  const origin = await startOrigin(tools.nginx, directory, pki.origin)
  processes.push(...origin.processes)
  const context = { directory, pki, tools, maxTunnels: 20_000, nodeArgs: [] }
  const candidates = [
    { key: 'floor', peer: SUITE_PEERS.find((p) => p.name === 'connect-floor') },
    { key: 'fastify-floor', peer: SUITE_PEERS.find((p) => p.name === 'fastify-connect-floor') },
    { key: 'plugin', peer: SUITE_PEERS.find((p) => p.name === 'plugin') },
    { key: 'ours', peer: { ...PEERS.find((p) => p.name === 'ours'), label: 'ours, the bin (no users, log level warn)' } },
    { key: 'squid', peer: { ...PEERS.find((p) => p.name === 'squid'), label: 'Squid (no auth, access log off)' } }
  ]
  const running = []
  for (const { key, peer } of candidates) {
    if (!WANTED.includes(key)) continue
    if (!peer.needs.every((tool) => tools[tool] !== undefined)) {
      console.log(`skipping ${peer.label}: ${peer.needs.filter((tool) => tools[tool] === undefined).join(', ')} not found`)
      continue
    }
    const started = await startPeer(peer, context)
    processes.push(started.started)
    running.push({ ...started, results: [] })
  }
  const target = `${PLAIN_HOST}:${origin.httpPort}`
  for (const { port } of running) await connectLoad({ proxyPort: port, target, seconds: 1, parallel: PARALLEL })
  for (let round = 0; round < ROUNDS; round++) {
    for (const path of running.map((_, i) => running[(i + round) % running.length])) {
      const before = cpuSeconds(path.pid)
      const r = await connectLoad({ proxyPort: path.port, target, seconds: SECONDS, parallel: PARALLEL })
      const cpu = cpuSeconds(path.pid) - before
      const result = { perSecond: r.answered / r.seconds, micros: cpu * 1e6 / r.answered, errors: r.refused + r.errors }
      path.results.push(result)
      console.log(`round ${round + 1} ${path.peer.label}: ${fixed(result.perSecond)} CONNECT/s, ${fixed(result.micros)} µs CPU per CONNECT (open, 200, close), errors ${result.errors}${r.firstError === undefined ? '' : ` (${r.firstError})`}`)
    }
  }
  console.log(`\n${ROUNDS} rounds of ${SECONDS} s, ${PARALLEL} clients; medians\n`)
  console.log('| proxy | answered CONNECT/s | proxy CPU µs per answered CONNECT | each round (µs) | errors |')
  console.log('|---|---|---|---|---|')
  for (const { peer, results } of running) {
    console.log(`| ${peer.label} | ${fixed(median(results.map((r) => r.perSecond)))} | ${fixed(median(results.map((r) => r.micros)))} | ${results.map((r) => fixed(r.micros)).join(' / ')} | ${results.reduce((sum, r) => sum + r.errors, 0)} |`)
  }
} finally {
  for (const started of processes.reverse()) await stopProcess(started)
  rmSync(directory, { recursive: true, force: true })
}

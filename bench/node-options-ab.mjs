// A/B of Node options on warm processes: two bins of this checkout, one with the options
// `npm start` passes (bench/shipped-node-args.mjs), one with `NODE_OPTIONS_AB` added, run side by
// side with the per-request suite's full configuration (one user, interception of 127.0.0.2 and
// api.example.com, a header rule for them). Each is warmed with hey for NODE_AB_WARM s (20), then
// the two alternate in NODE_AB_ROUNDS (8) rounds of NODE_AB_SECONDS (4) s, the order swapped
// every round. Prints each bin's CPU per request (user + system from /proc/PID/stat over the 200s)
// per round, the medians of CPU, req/s and p99, the per-round ratio of the two, and each bin's RSS
// at the end. `bench/memory.mjs` measures fresh processes; this measures processes that have
// warmed, where what an option costs while the JIT is still compiling no longer shows.
//
//   npm run build && NODE_OPTIONS_AB=--no-concurrent-recompilation NODE_AB_MODE=intercept node bench/node-options-ab.mjs
//
// NODE_AB_MODE: `intercept` (hey, GET https://127.0.0.2/small through the proxy, intercepted) or
// `http` (GET http://127.0.0.1/small). Needs hey and openssl; origins are bench/origin.mjs.
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { cpuMicros, hey } from './bin-load.mjs'
import { freePort, waitForPort } from './compare/processes.mjs'
import { makeCa, makeLeaf } from './pki.mjs'
import { SHIPPED_NODE_ARGS } from './shipped-node-args.mjs'

const here = (file) => fileURLToPath(new URL(file, import.meta.url))
const ROUNDS = Number(process.env.NODE_AB_ROUNDS ?? 8)
const SECONDS = Number(process.env.NODE_AB_SECONDS ?? 4)
const WARM = Number(process.env.NODE_AB_WARM ?? 20)
const MODE = process.env.NODE_AB_MODE ?? 'intercept'
const extra = (process.env.NODE_OPTIONS_AB ?? '').split(/\s+/).filter(Boolean)
if (extra.length === 0) throw new Error('NODE_OPTIONS_AB: the Node options to compare with the shipped ones')
if (hey === undefined) throw new Error('hey is not installed (apt-get install hey)')
if (!['intercept', 'http'].includes(MODE)) throw new Error(`NODE_AB_MODE: "${MODE}" is neither intercept nor http`)

const dir = mkdtempSync(join(tmpdir(), 'ffp-node-options-ab-'))
const operatorCa = makeCa(dir, 'operator')
const destinationCa = makeCa(dir, 'destination')
const originLeaf = makeLeaf(dir, 'origin', destinationCa, ['127.0.0.2'])
const USER = 'bench'
const PASSWORD = 'bench-proxy-password'
const INTERCEPTED = ['127.0.0.2', 'api.example.com']
const children = []

/** bench/origin.mjs with `args` and `env`; resolves with its port. */
function startOrigin (args, env) {
  const child = spawn(process.execPath, [here('./origin.mjs'), ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
  children.push(child)
  return new Promise((resolve) => child.stdout.once('data', (line) => resolve(Number(String(line).trim()))))
}

/** The bin with the shipped options and `more`, on the full configuration. */
async function startBin (more) {
  const port = await freePort()
  const config = join(dir, `proxy-${port}.json`)
  writeFileSync(config, JSON.stringify({
    listen: [{ host: '127.0.0.1', port }],
    users: { [USER]: PASSWORD },
    destinations: { allowedNetworks: ['127.0.0.0/8'], allowedPorts: '*' },
    interception: { hosts: INTERCEPTED, ca: { cert: operatorCa.certPath, key: operatorCa.keyPath }, trustedDestinationCa: destinationCa.certPath },
    headers: [{ hosts: INTERCEPTED, set: { 'X-Team': 'bench' }, remove: ['Cookie'] }]
  }))
  const child = spawn(process.execPath, [...SHIPPED_NODE_ARGS, ...more, here('../dist/lib/cli/main.js'), '--config', config], { env: { ...process.env, NODE_ENV: 'production' }, stdio: ['ignore', 'ignore', 'inherit'] })
  children.push(child)
  await waitForPort('127.0.0.1', port, { child, output: () => '', name: 'the bin' })
  return { child, port }
}

const plainPort = await startOrigin([], {})
const tlsPort = await startOrigin(['tls', originLeaf.keyPath, originLeaf.certPath], { ORIGIN_HOST: '127.0.0.2' })
const target = MODE === 'http' ? `http://127.0.0.1:${plainPort}/small` : `https://127.0.0.2:${tlsPort}/small`

/** hey through the bin on `port` for `seconds`: the 200s and the p99 in ms. */
function load (port, seconds) {
  const output = execFileSync(hey, ['-z', `${seconds}s`, '-c', '32', '-x', `http://${USER}:${PASSWORD}@127.0.0.1:${port}`, target], { encoding: 'utf8', maxBuffer: 1 << 24 })
  return { answered: Number(/\[200\]\s+(\d+) responses/.exec(output)?.[1] ?? 0), p99: Number(/99% in ([\d.]+) secs/.exec(output)?.[1]) * 1000 }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

try {
  const bins = { shipped: await startBin([]), [extra.join(' ')]: await startBin(extra) }
  const names = Object.keys(bins)
  for (const name of names) load(bins[name].port, WARM)
  const runs = Object.fromEntries(names.map((name) => [name, []]))
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of round % 2 === 0 ? names : [...names].reverse()) {
      const { child, port } = bins[name]
      const before = cpuMicros(child.pid)
      const { answered, p99 } = load(port, SECONDS)
      runs[name].push({ cpu: (cpuMicros(child.pid) - before) / answered, reqPerSec: answered / SECONDS, p99 })
    }
  }
  console.log(`${MODE}, Node ${process.version}, ${WARM} s warm-up, ${ROUNDS} rounds of ${SECONDS} s, 32 connections (hey)\n`)
  for (const name of names) {
    const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${bins[name].child.pid}/status`, 'utf8'))?.[1]) / 1024
    const r = runs[name]
    console.log(`${name}: CPU µs per request ${r.map((x) => x.cpu.toFixed(1)).join(' / ')}, median ${median(r.map((x) => x.cpu)).toFixed(1)}; req/s ${median(r.map((x) => x.reqPerSec)).toFixed(0)}; p99 ${median(r.map((x) => x.p99)).toFixed(1)} ms; RSS at the end ${rss.toFixed(0)} MiB`)
  }
  const ratios = runs[names[1]].map((x, i) => x.cpu / runs[names[0]][i].cpu)
  console.log(`CPU per request, ${names[1]} over shipped, per round: ${ratios.map((x) => x.toFixed(2)).join(' / ')}, median ${median(ratios).toFixed(2)}x`)
} finally {
  for (const child of children) child.kill()
  rmSync(dir, { recursive: true, force: true })
}

// How far http:// forwarding through ours is from what Node itself gives: the same load
// (bench/load.mjs http-proxy, keep-alive, 13 B responses from bench/origin.mjs) through ours
// (bench/proxy-server.mjs: the built plugin in a minimal Fastify app), through the same
// forward written as a bare Fastify route (floor-fastify-proxy.mjs) and as a bare Node HTTP
// server (floor-node-proxy.mjs), and through the ready-to-run server as shipped
// (dist/lib/cli/main.js, NODE_ENV=production, access log at info to /dev/null), alternating,
// several rounds, every one with the Node options `npm start` passes (bench/shipped-node-args.mjs).
// Reports the medians of req/s and of the proxy's CPU (user + system from /proc/<pid>/stat) per
// request, the steady figure on a shared machine. Loopback only. Needs `npm run build` first
// (`npm run bench:floor` does it).
// Knobs: BENCH_ROUNDS (5), BENCH_DURATION (seconds per run, 4), BENCH_CONNECTIONS (32),
// BENCH_FLOOR_BIN_LEVELS (log levels to run the ready-to-run server at, comma-separated: info).
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort, waitForPort } from './compare/processes.mjs'
import { SHIPPED_NODE_ARGS } from './shipped-node-args.mjs'

const here = (file) => fileURLToPath(new URL(file, import.meta.url))
const rounds = Number(process.env.BENCH_ROUNDS ?? 5)
const duration = process.env.BENCH_DURATION ?? '4'
const connections = process.env.BENCH_CONNECTIONS ?? '32'
const binLevels = (process.env.BENCH_FLOOR_BIN_LEVELS ?? 'info').split(',').filter((level) => level !== '')

/** A floor or the plugin's server, with the Node options the bin gets, so that their differences are code. */
function start (file) {
  const child = spawn(process.execPath, [...SHIPPED_NODE_ARGS, here(file)], { stdio: ['ignore', 'pipe', 'inherit'] })
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code) => reject(new Error(`${file} exited with ${code} before listening`)))
    child.stdout.once('data', (line) => resolve({ child, port: Number(String(line).trim()) }))
  })
}

/** The ready-to-run server with loopback destinations allowed and its defaults otherwise, at log level `level`. */
async function startBin (directory, level) {
  const port = await freePort()
  const config = join(directory, `floor-bin-${level}.json`)
  writeFileSync(config, JSON.stringify({ listen: [{ host: '127.0.0.1', port }], destinations: { allowedPorts: '*', allowedNetworks: ['127.0.0.0/8'] }, log: { level } }))
  const child = spawn(process.execPath, [...SHIPPED_NODE_ARGS, here('../dist/lib/cli/main.js'), '--config', config], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, NODE_ENV: 'production' } })
  await waitForPort('127.0.0.1', port, { child, output: () => '', name: 'the ready-to-run server' })
  return { child, port }
}

/** CPU-seconds (user + system) the process has used so far. */
function cpuSeconds (pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

const origin = await start('./origin.mjs')
const directory = mkdtempSync(join(tmpdir(), 'ffp-floor-'))
const proxies = [
  { name: 'ours (bench/proxy-server.mjs)', file: './proxy-server.mjs' },
  ...binLevels.map((level) => ({ name: `ours, the ready-to-run server (log level ${level}${level === 'info' ? ': access log on, the default' : ''})`, start: () => startBin(directory, level) })),
  { name: 'Fastify route, bare forward (bench/floor-fastify-proxy.mjs)', file: './floor-fastify-proxy.mjs' },
  { name: 'Node HTTP server, bare forward (bench/floor-node-proxy.mjs)', file: './floor-node-proxy.mjs' }
]
for (const proxy of proxies) Object.assign(proxy, proxy.start === undefined ? await start(proxy.file) : await proxy.start(), { rates: [], cpu: [] })
try {
  for (let round = 0; round < rounds; round++) {
    const order = proxies.map((_, index) => proxies[(index + round) % proxies.length])
    for (const proxy of order) {
      const before = cpuSeconds(proxy.child.pid)
      const result = JSON.parse(execFileSync(process.execPath, [here('./load.mjs'), 'http-proxy', String(origin.port), String(proxy.port), duration, connections], { encoding: 'utf8' }))
      const used = cpuSeconds(proxy.child.pid) - before
      if (result.errors > 0) throw new Error(`${proxy.name}: ${result.errors} errors`)
      proxy.rates.push(result.reqPerSec)
      // The warm-up's requests are not counted but its CPU is: the same share for every proxy.
      proxy.cpu.push(1e6 * used / result.requests)
    }
  }
} finally {
  for (const { child } of [origin, ...proxies]) child.kill()
  rmSync(directory, { recursive: true, force: true })
}
console.log(`http:// forwarding, keep-alive, 13 B responses; ${rounds} rounds of ${duration} s, ${connections} connections; medians\n`)
console.log('| proxy | req/s | proxy CPU µs per request |')
console.log('|---|---|---|')
for (const proxy of proxies) console.log(`| ${proxy.name} | ${Math.round(median(proxy.rates))} | ${median(proxy.cpu).toFixed(1)} |`)

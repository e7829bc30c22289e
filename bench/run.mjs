// Benchmark harness: runs each scenario direct and through the proxy in one run and prints
// the ratio. Everything stays on 127.0.0.1. BENCH_DURATION (s) and BENCH_CONNECTIONS tune it.
import { execFileSync, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { fileURLToPath } from 'node:url'

const here = (file) => fileURLToPath(new URL(file, import.meta.url))
const duration = process.env.BENCH_DURATION ?? '8'
const connections = process.env.BENCH_CONNECTIONS ?? '32'

function startChild (file) {
  const child = spawn(process.execPath, [here(file)], { stdio: ['ignore', 'pipe', 'inherit'] })
  return new Promise((resolve) => child.stdout.once('data', (chunk) => resolve({ child, port: Number(chunk.toString().trim()) })))
}

function load (mode, originPort, proxyPort) {
  const output = execFileSync(process.execPath, [here('./load.mjs'), mode, String(originPort), String(proxyPort), duration, connections], { encoding: 'utf8' })
  return JSON.parse(output)
}

function rssMiB (pid) {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'))
  return line === undefined ? NaN : Number(line.split(/\s+/)[1]) / 1024
}

const origin = await startChild('./origin.mjs')
const proxy = await startChild('./proxy-server.mjs')
console.log(`node ${process.version}, ${cpus().length} cores, duration ${duration}s per run, ${connections} connections (downloads: 1)`)
console.log('origin: Node http (bench/origin.mjs); client: undici Pool (bench/load.mjs), each in its own process\n')

const scenarios = [
  ['http:// forwarding, keep-alive, 13 B responses', 'http-direct', 'http-proxy', 'reqPerSec'],
  ['opaque CONNECT tunnel, keep-alive inside, 13 B responses', 'tunnel-direct', 'tunnel-proxy', 'reqPerSec'],
  ['64 MiB download, opaque tunnel', 'download-direct', 'download-tunnel', 'mbPerSec']
]
const rows = []
for (const [name, directMode, proxyMode, metric] of scenarios) {
  const direct = load(directMode, origin.port, proxy.port)
  const proxied = load(proxyMode, origin.port, proxy.port)
  rows.push({ name, direct, proxied, metric, ratio: proxied[metric] / direct[metric] })
}
const rss = rssMiB(proxy.child.pid)
origin.child.kill()
proxy.child.kill()

const fmt = (n, digits = 0) => n.toFixed(digits)
console.log('| scenario | direct | through proxy | proxy / direct | p99 direct ms | p99 proxy ms | errors |')
console.log('|---|---|---|---|---|---|---|')
for (const { name, direct, proxied, metric, ratio } of rows) {
  const unit = metric === 'reqPerSec' ? 'req/s' : 'MB/s'
  console.log(`| ${name} | ${fmt(direct[metric])} ${unit} | ${fmt(proxied[metric])} ${unit} | ${fmt(ratio, 2)} | ${fmt(direct.p99, 1)} | ${fmt(proxied.p99, 1)} | ${direct.errors + proxied.errors} |`)
}
console.log(`\nproxy RSS after the run: ${fmt(rss, 1)} MiB`)

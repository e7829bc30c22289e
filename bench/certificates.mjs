// Certificate benchmark: leaves minted per second by the CA-backed provider, for
// ECDSA P-256 and RSA 2048 leaves, and TLS handshakes per second on a warm cache.
// Run `npm run build` first; this uses dist/. Everything stays on 127.0.0.1.
// BENCH_DURATION (s per measurement, default 5), BENCH_CONCURRENCY (mints or connections in
// flight, default 16), BENCH_HOSTS (distinct SNI names in the handshake test, default 50).
// The handshake clients run in a child process (`node bench/certificates.mjs client ...`), and so
// does each first leaf of a fresh process (`node bench/certificates.mjs first-leaf ...`: whatever
// the first mint loads is loaded then, as in a proxy just started).
import { execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { connect, createServer } from 'node:tls'

const duration = Number(process.env.BENCH_DURATION ?? '5') * 1000
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? '16')
const hostCount = Number(process.env.BENCH_HOSTS ?? '50')
const hosts = Array.from({ length: hostCount }, (_, index) => `host-${index}.bench.example`)

const require = createRequire(import.meta.url)
const { createCaCertificateProvider } = require('../dist/lib/index.js')

if (process.argv[2] === 'client') {
  await runClients(Number(process.argv[3]), process.argv[4])
  process.exit(0)
}
if (process.argv[2] === 'first-leaf') {
  await mintFirstLeaf(process.argv[3], process.argv[4])
  process.exit(0)
}

const directory = mkdtempSync(join(tmpdir(), 'ffp-bench-ca-'))
try {
  console.log(`node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? 'unknown'}), ${duration / 1000} s per measurement, concurrency ${concurrency}`)
  const ec = makeCa(directory, 'ec')
  const rsa = makeCa(directory, 'rsa')

  for (const [caName, ca] of [['ECDSA P-256 CA', ec], ['RSA 2048 CA', rsa]]) {
    for (const keyType of ['ecdsa-p256', 'rsa-2048']) {
      const rate = await mintRate(ca, keyType)
      console.log(`mint  ${caName.padEnd(15)} leaf ${keyType.padEnd(10)} ${rate.perSecond.toFixed(0).padStart(6)} leaves/s  (${rate.count} in ${(rate.ms / 1000).toFixed(1)} s)`)
    }
  }
  for (const keyType of ['ecdsa-p256', 'rsa-2048']) {
    for (const keyPoolSize of [0, 4]) {
      const latency = await firstMintLatency(ec, keyType, keyPoolSize)
      console.log(`first-mint latency, leaf ${keyType.padEnd(10)} keyPoolSize ${keyPoolSize}: median ${latency.toFixed(2)} ms (one new host at a time, pool refilled between)`)
    }
  }
  const fresh = []
  for (let index = 0; index < 3; index++) fresh.push(await firstLeafOfFreshProcess('ec'))
  console.log(`first leaf of a fresh process (ECDSA CA and leaf), 3 processes: ${fresh.map((r) => `${r.ms.toFixed(1)} ms`).join(' / ')}; the event loop's longest stall meanwhile ${fresh.map((r) => `${r.stallMs.toFixed(1)} ms`).join(' / ')}`)
  for (const keyType of ['ecdsa-p256', 'rsa-2048']) {
    const result = await handshakeRate(ec, keyType)
    console.log(`TLS handshakes, warm cache, leaf ${keyType.padEnd(10)} ${result.perSecond.toFixed(0).padStart(6)} handshakes/s over ${hostCount} SNI names (${result.count} in ${(result.ms / 1000).toFixed(1)} s, TLS 1.3, no resumption)`)
  }
} finally {
  rmSync(directory, { recursive: true, force: true })
}

function makeCa (dir, kind) {
  const keyPath = join(dir, `${kind}.key`)
  const certPath = join(dir, `${kind}.pem`)
  const keyArgs = kind === 'ec' ? ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'] : ['-newkey', 'rsa:2048']
  execFileSync('openssl', ['req', '-x509', ...keyArgs, '-nodes', '-subj', `/CN=Bench ${kind} CA`, '-days', '30',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign',
    '-keyout', keyPath, '-out', certPath], { stdio: 'ignore' })
  return { cert: readFileSync(certPath, 'utf8'), key: readFileSync(keyPath, 'utf8') }
}

async function mintRate (ca, keyType) {
  const provider = createCaCertificateProvider({ ...ca, keyType, cacheSize: 1_000_000, keyPoolSize: 0 })
  await provider.getLeaf('warm-up.example')
  let count = 0
  const start = performance.now()
  const deadline = start + duration
  await Promise.all(Array.from({ length: concurrency }, async (_, worker) => {
    while (performance.now() < deadline) {
      await provider.getLeaf(`m${worker}-${count++}.bench.example`)
    }
  }))
  const ms = performance.now() - start
  return { count, ms, perSecond: count / ms * 1000 }
}

async function firstMintLatency (ca, keyType, keyPoolSize) {
  const provider = createCaCertificateProvider({ ...ca, keyType, keyPoolSize })
  const samples = []
  for (let index = 0; index < 15; index++) {
    await new Promise((resolve) => setTimeout(resolve, keyType === 'rsa-2048' ? 400 : 20)) // let the pool refill
    const start = performance.now()
    await provider.getLeaf(`first-${index}.bench.example`)
    samples.push(performance.now() - start)
  }
  samples.sort((a, b) => a - b)
  return samples[Math.floor(samples.length / 2)]
}

/** Runs this script in a child process with `args` (its mode first) and resolves with the JSON it prints. */
async function runThisScript (args) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: process.env })
  let output = ''
  child.stdout.on('data', (chunk) => { output += chunk })
  await once(child, 'exit')
  return JSON.parse(output)
}

async function firstLeafOfFreshProcess (kind) {
  return await runThisScript(['first-leaf', join(directory, `${kind}.pem`), join(directory, `${kind}.key`)])
}

/** In a fresh process: one leaf from a new provider, timed, with the event loop's delay monitored meanwhile. */
async function mintFirstLeaf (certPath, keyPath) {
  const provider = createCaCertificateProvider({ cert: readFileSync(certPath, 'utf8'), key: readFileSync(keyPath, 'utf8') })
  await new Promise((resolve) => setTimeout(resolve, 300)) // the CA key's import and the start-up done
  const delay = monitorEventLoopDelay({ resolution: 1 })
  delay.enable()
  const start = performance.now()
  await provider.getLeaf('first.bench.example')
  const ms = performance.now() - start
  delay.disable()
  process.stdout.write(JSON.stringify({ ms, stallMs: delay.max / 1e6 }))
}

async function handshakeRate (ca, keyType) {
  const provider = createCaCertificateProvider({ ...ca, keyType })
  for (const host of hosts) await provider.getLeaf(host)
  const fallback = await provider.getLeaf(hosts[0])
  const server = createServer({
    cert: fallback.cert + fallback.chain,
    key: fallback.key,
    SNICallback: (name, done) => {
      provider.getCertificate({ host: name, port: 443 }, AbortSignal.timeout(10_000)).then((context) => done(null, context), done)
    }
  }, (socket) => socket.end())
  server.on('tlsClientError', () => {})
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const result = await runThisScript(['client', String(server.address().port), join(directory, 'ec.pem')])
  server.close()
  return result
}

async function runClients (port, caPath) {
  const ca = readFileSync(caPath)
  let count = 0
  let failures = 0
  const start = performance.now()
  const deadline = start + duration
  await Promise.all(Array.from({ length: concurrency }, async (_, worker) => {
    let index = worker
    while (performance.now() < deadline) {
      const servername = hosts[index++ % hosts.length]
      const socket = connect({ port, host: '127.0.0.1', servername, ca })
      try {
        await once(socket, 'secureConnect')
        count++
      } catch {
        failures++
      } finally {
        socket.destroy()
      }
    }
  }))
  const ms = performance.now() - start
  if (failures > 0) process.stderr.write(`${failures} handshakes failed\n`)
  process.stdout.write(JSON.stringify({ count, ms, perSecond: count / ms * 1000 }))
}

// Soak and fault run: mixed traffic with injected faults through one proxy process,
// for SOAK_MINUTES (default 30; fractions allowed, e.g. 0.5), with SOAK_CLIENTS concurrent
// clients (default 4: this checks correctness and leaks, not speed). Run with `npm run soak`
// (builds first; uses dist/). Everything stays on 127.0.0.1.
// Traffic and faults: see bench/soak-scenarios.mjs. The proxy (bench/soak-proxy.mjs) runs in its
// own process; the origins and clients run here, so every body is compared (SHA-256) with what
// the origin sent. Measured: the proxy's heap (after a full GC) and RSS, its open file
// descriptors (/proc/PID/fd), its open tunnels, and the origin's view of every tunnel's
// silence, at the start (after a warm-up, clients closed, everything settled), the peak (sampled
// every 5 s under load) and the end (clients closed, settled).
// Exit code 1 when a check fails: a hash mismatch, a cut body read as complete, a wrong outcome
// for a DNS fault, a tunnel open past its idle timeout, an operation hung for 60 s, the proxy
// exiting, an error in this harness itself, or descriptors, heap or tunnels not back to their
// starting level.
// SOAK_IDLE_TIMEOUT (ms, default 3000) is the proxy's tunnelIdleTimeout; a tunnel silent for
// longer than that plus SOAK_IDLE_MARGIN (ms, default 2000) counts as outliving it.
import { fork } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { Agent as HttpAgent } from 'node:http'
import { connect as http2Connect } from 'node:http2'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ProxyAgent } from 'undici'
import { makeCa, makeLeaf } from './pki.mjs'
import { startOrigins } from './soak-origins.mjs'
import { createScenarios } from './soak-scenarios.mjs'
import { createStats } from './soak-stats.mjs'

const minutes = Number(process.env.SOAK_MINUTES ?? '30')
const clients = Number(process.env.SOAK_CLIENTS ?? '4')
const tunnelIdleTimeout = Number(process.env.SOAK_IDLE_TIMEOUT ?? '3000')
const idleMargin = Number(process.env.SOAK_IDLE_MARGIN ?? '2000')
const connectTimeout = 2000
const HANG_LIMIT = 60_000
const SAMPLE_EVERY = 5000
const MiB = 1024 * 1024

const directory = mkdtempSync(join(tmpdir(), 'ffp-soak-'))
const destinationCa = makeCa(directory, 'destination-ca')
const operatorCa = makeCa(directory, 'operator-ca')
const originLeaf = makeLeaf(directory, 'origin', destinationCa, ['127.0.0.1', 'mitm.soak.test', 'web.soak.test'])
const listenerLeaf = makeLeaf(directory, 'listener', destinationCa)

const origins = await startOrigins(originLeaf)
const proxyChild = fork(fileURLToPath(new URL('./soak-proxy.mjs', import.meta.url)), [JSON.stringify({
  caCert: operatorCa.certPath,
  caKey: operatorCa.keyPath,
  destinationCa: destinationCa.certPath,
  listenerCert: listenerLeaf.certPath,
  listenerKey: listenerLeaf.keyPath,
  tunnelIdleTimeout,
  connectTimeout
})], { execArgv: ['--expose-gc'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
const proxy = await new Promise((resolve, reject) => {
  proxyChild.once('message', resolve)
  proxyChild.once('exit', (code) => reject(new Error(`the proxy exited (${code}) before it listened`)))
})
let proxyExited = null
proxyChild.once('exit', (code, signal) => { proxyExited = `${code ?? signal}` })

const stats = createStats()
// A bug in this harness must not end the run without a report: it is counted and fails the run.
process.on('uncaughtException', (error) => { stats.violation('harnessError', String(error?.stack ?? error).slice(0, 300)) })
const listenerCa = readFileSync(destinationCa.certPath)
const env = { proxy, ports: origins.ports, expected: origins.expected, touch: origins.touch, stats, tunnelIdleTimeout, idleMargin }
let sessions = []
let nextSession = 0
function openClients () {
  env.agent = new HttpAgent({ keepAlive: true, maxSockets: 8 })
  env.intercepting = new ProxyAgent({ uri: `http://127.0.0.1:${proxy.plainPort}`, requestTls: { ca: readFileSync(operatorCa.certPath) } })
  sessions = [undefined, undefined]
}
env.h2Session = () => {
  const index = nextSession++ % sessions.length
  let session = sessions[index]
  if (session === undefined || session.closed || session.destroyed) {
    session = http2Connect(`https://127.0.0.1:${proxy.h2Port}`, { ca: listenerCa })
    session.on('error', () => {})
    sessions[index] = session
  }
  return session
}
async function closeClients () {
  env.agent.destroy()
  await env.intercepting.close()
  for (const session of sessions) session?.destroy()
}
openClients()
const scenarios = createScenarios(env)

/** Runs one scenario with a watchdog that destroys everything it opened after HANG_LIMIT. */
async function runOne (scenario) {
  const resources = new Set()
  const controller = new AbortController()
  const ctx = {
    signal: controller.signal,
    track (resource) { resources.add(resource); return resource },
    destroyAll () { for (const resource of resources) resource.destroy() }
  }
  let timer
  const hung = new Promise((resolve) => {
    timer = setTimeout(() => { resolve('hung') }, HANG_LIMIT)
  })
  try {
    const outcome = await Promise.race([scenario.run(ctx).then(() => 'done'), hung])
    if (outcome === 'hung') stats.violation('hang', `${scenario.name} still running after ${HANG_LIMIT / 1000} s`)
  } catch (error) {
    stats.unexpected(scenario.name, error)
  } finally {
    clearTimeout(timer)
    controller.abort()
    ctx.destroyAll()
  }
}

function pick () {
  const total = scenarios.reduce((sum, s) => sum + s.weight, 0)
  let r = Math.random() * total
  for (const scenario of scenarios) {
    r -= scenario.weight
    if (r <= 0) return scenario
  }
  return scenarios[0]
}

/** The proxy's heap and RSS after a full GC, its tunnels and its open descriptors. */
function sample () {
  return new Promise((resolve, reject) => {
    if (proxyExited !== null) { reject(new Error(`the proxy exited (${proxyExited})`)); return }
    proxyChild.once('message', (message) => {
      resolve({ heapUsed: message.heapUsed, rss: message.rss, activeTunnels: message.activeTunnels, fds: readdirSync(`/proc/${proxyChild.pid}/fd`).length, originTunnels: origins.openTunnels() })
    })
    proxyChild.send({ type: 'stats' })
  })
}

/** Waits until no tunnel is open and the descriptor count held still for 3 samples (max 60 s). */
async function settle () {
  let previous
  let still = 0
  const deadline = Date.now() + 60_000
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const now = await sample()
    still = previous !== undefined && now.fds === previous.fds && now.activeTunnels === 0 && now.originTunnels === 0 ? still + 1 : 0
    previous = now
    if (still >= 3 || Date.now() > deadline) return now
  }
}

const checkIdle = () => {
  const { found } = origins.checkIdle(tunnelIdleTimeout + idleMargin)
  for (const what of found) stats.violation('idleOverrun', `a tunnel at the origin silent for over ${tunnelIdleTimeout + idleMargin} ms and still open: ${what}`)
}

try {
  // Warm-up: every scenario once, so lazily created state (leaf cache, pools, JIT) is in the baseline.
  for (const scenario of scenarios) await runOne(scenario)
  stats.reset()
  await closeClients()
  openClients()
  const start = await settle()
  const peak = { ...start }
  const startedAt = Date.now()
  const endAt = startedAt + minutes * 60_000
  process.stderr.write(`soak: ${minutes} min, ${clients} clients, proxy pid ${proxyChild.pid}; start heap ${(start.heapUsed / MiB).toFixed(1)} MiB, rss ${(start.rss / MiB).toFixed(1)} MiB, fds ${start.fds}\n`)

  let lastProgress = startedAt
  const sampler = setInterval(() => {
    checkIdle()
    sample().then((now) => {
      for (const key of Object.keys(peak)) peak[key] = Math.max(peak[key], now[key])
      if (Date.now() - lastProgress >= 60_000) {
        lastProgress = Date.now()
        process.stderr.write(`soak: ${((Date.now() - startedAt) / 60_000).toFixed(0)} min: ${stats.summaryLine()}; heap ${(now.heapUsed / MiB).toFixed(1)} MiB, rss ${(now.rss / MiB).toFixed(1)} MiB, fds ${now.fds}, tunnels ${now.activeTunnels}\n`)
      }
    }, () => {})
  }, SAMPLE_EVERY)
  const idleChecker = setInterval(checkIdle, 500)
  await Promise.all(Array.from({ length: clients }, async () => {
    while (Date.now() < endAt && proxyExited === null) await runOne(pick())
  }))
  clearInterval(sampler)
  const loadSeconds = (Date.now() - startedAt) / 1000
  await closeClients()
  const end = await settle()
  clearInterval(idleChecker)
  checkIdle()

  const failures = []
  if (proxyExited !== null) failures.push(`the proxy exited (${proxyExited})`)
  if (end.fds > start.fds + 2) failures.push(`descriptors: ${end.fds} at the end against ${start.fds} at the start`)
  if (end.heapUsed > start.heapUsed + 16 * MiB) failures.push(`heap: ${(end.heapUsed / MiB).toFixed(1)} MiB at the end against ${(start.heapUsed / MiB).toFixed(1)} MiB at the start`)
  if (end.activeTunnels !== 0 || end.originTunnels !== 0) failures.push(`tunnels still open at the end: ${end.activeTunnels} at the proxy, ${end.originTunnels} at the origin`)
  failures.push(...stats.failures())

  const report = stats.report({ minutes, loadSeconds, clients, tunnelIdleTimeout, idleMargin, start, peak, end, node: process.version, cpus: cpus().length })
  process.stdout.write(`${report}\n${failures.length === 0 ? 'PASS' : `FAIL\n- ${failures.join('\n- ')}`}\n`)
  process.exitCode = failures.length === 0 ? 0 : 1
} finally {
  proxyChild.kill()
  await origins.close()
  rmSync(directory, { recursive: true, force: true })
}

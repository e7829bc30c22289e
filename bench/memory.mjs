// The proxy's memory (`npm run bench:memory`): starts the ready-to-run server as bench:compare
// does (dist/lib/cli/main.js, the same generated configuration, NODE_ENV=production, log warn;
// nginx or bench/origin.mjs as origin) and reads its memory at idle and after each load
// scenario: VmRSS and VmHWM from /proc/<pid>/status, the anonymous part split by allocator
// (bench/rss-parts.mjs: V8's pages, the main thread's malloc, the other threads'), and, through
// bench/memory-hook.cjs (preloaded with --require, bench only), process.memoryUsage() and the V8
// heap spaces. Also the proxy's CPU seconds per 1,000 requests (per GiB for downloads) of each
// scenario, the figure to watch when a variant changes the garbage collector. Prints the medians
// over MEMORY_RUNS fresh proxies per variant, the variants alternating within each run.
//
// Knobs: MEMORY_RUNS (3), MEMORY_DURATION (seconds per scenario, 2), MEMORY_SCENARIOS
// (default http,tunnel,intercept,intercept-new,download,download-intercept),
// MEMORY_VARIANTS: `label=args|label=args`, args being Node options and NAME=value
// environment entries separated by spaces (default: `shipped=` and the options `npm start`
// passes, bench/shipped-node-args.mjs), e.g.
// MEMORY_VARIANTS='none=|semi1=--max-semi-space-size=1|arena1=MALLOC_ARENA_MAX=1'.
// MEMORY_SETTLE_SECONDS (0): then wait that long with no traffic and read once more.
// MEMORY_JSON=<file> also writes every sample as JSON.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { runLoad, SCENARIOS } from './compare/load-scenarios.mjs'
import { makeOriginPki, startOrigin } from './compare/origin.mjs'
import { startOurs } from './compare/peers.mjs'
import { cpuSeconds, memoryMiB, nodeOptionsAndEnv, statusKiB, stopProcess } from './compare/processes.mjs'
import { rssParts } from './rss-parts.mjs'
import { LOAD_SCENARIOS } from './compare/settings.mjs'
import { detectTools } from './compare/tools.mjs'
import { SHIPPED_NODE_ARGS } from './shipped-node-args.mjs'

const HOOK = fileURLToPath(new URL('./memory-hook.cjs', import.meta.url))
const positive = (name, fallback) => {
  const value = Number(process.env[name] || fallback)
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name}: "${process.env[name]}" is not a positive number`)
  return value
}
const runs = positive('MEMORY_RUNS', 3)
const duration = positive('MEMORY_DURATION', 2)
const settle = Number(process.env.MEMORY_SETTLE_SECONDS || 0)
const scenarios = (process.env.MEMORY_SCENARIOS || LOAD_SCENARIOS.join(',')).split(',').map((s) => s.trim()).filter(Boolean)
for (const scenario of scenarios) if (!(scenario in SCENARIOS)) throw new Error(`MEMORY_SCENARIOS: unknown "${scenario}"`)
const variants = (process.env.MEMORY_VARIANTS || `shipped=${SHIPPED_NODE_ARGS.join(' ')}`).split('|').map((text) => {
  const [label, args = ''] = text.split(/=(.*)/s)
  return { label, ...nodeOptionsAndEnv(args) }
})

/** Sends SIGUSR2 to the proxy and resolves with the hook's `memory-usage` line, parsed. */
function inProcessUsage (child) {
  return new Promise((resolve, reject) => {
    let text = ''
    const onData = (chunk) => {
      text += chunk.toString()
      const match = text.match(/memory-usage (\{.*\})\n/)
      if (match === null) return
      child.stderr.removeListener('data', onData)
      child.removeListener('exit', onExit)
      resolve(JSON.parse(match[1]))
    }
    const onExit = () => reject(new Error('the proxy exited before reporting its memory'))
    child.stderr.on('data', onData)
    child.once('exit', onExit)
    child.kill('SIGUSR2')
  })
}

async function sample (proxy, phase) {
  const usage = await inProcessUsage(proxy.started.child)
  const { rss, peak } = memoryMiB(proxy.pid)
  const [anon, file] = ['RssAnon', 'RssFile'].map((field) => statusKiB(proxy.pid, field) / 1024)
  return { phase, rss, peak, anon, file, ...rssParts(proxy.pid), ...Object.fromEntries(['heapTotal', 'heapUsed', 'arrayBuffers', 'external'].map((k) => [k, usage[k]])), newSpace: usage.spaces.new_space?.size, oldSpace: usage.spaces.old_space?.size, codeSpace: usage.spaces.code_space?.size, largeObjects: usage.spaces.large_object_space?.size, modules: usage.modules }
}

/** One fresh proxy of `variant`: idle sample, then each scenario with its CPU and a sample. */
async function measure (variant, context, origin, settings) {
  const proxy = await startOurs({ ...context, name: `ours-${variant.label}`, nodeArgs: ['--require', HOOK, ...variant.nodeArgs], env: variant.env })
  try {
    const samples = [await sample(proxy, 'idle')]
    for (const scenario of scenarios) {
      const before = cpuSeconds(proxy.pid)
      const result = await runLoad(scenario, origin, context.pki, settings, proxy.port)
      const cpu = cpuSeconds(proxy.pid) - before
      if (result.requests === 0 || result.errors > 0) throw new Error(`${scenario}: ${result.requests} requests, ${result.errors} errors`)
      const taken = await sample(proxy, scenario)
      const gib = result.mbPerSec * duration / 1024
      const download = SCENARIOS[scenario].metric === 'mbPerSec'
      samples.push({ ...taken, cpuPer1000: download ? undefined : cpu / result.requests * 1000, cpuPerGiB: download ? cpu / gib : undefined })
    }
    if (settle > 0) {
      // How much the process gives back by itself once idle (V8's memory reducer, new space shrinking).
      await delay(settle * 1000)
      samples.push(await sample(proxy, `${settle} s idle`))
    }
    return samples
  } finally {
    await stopProcess(proxy.started)
  }
}

const median = (values) => {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b)
  if (sorted.length === 0) return NaN
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}
const fixed = (n, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '-')

function table (label, all) {
  const lines = [`### ${label} (median of ${all.length} runs; MiB, CPU-s)`, '', '| after | RSS | anonymous / file-backed | anonymous: V8 pages / main thread malloc / other threads malloc / rest | peak (VmHWM) | V8 heap reserved / used | new space | old space | code space | array buffers | CPU-s per 1,000 req | CPU-s per GiB |', '|---|---|---|---|---|---|---|---|---|---|---|---|']
  for (let i = 0; i < all[0].length; i++) {
    const m = (key) => median(all.map((samples) => samples[i][key]))
    lines.push(`| ${all[0][i].phase} | ${fixed(m('rss'))} | ${fixed(m('anon'))} / ${fixed(m('file'))} | ${['v8Pages', 'mainMalloc', 'threadMalloc', 'otherAnonymous'].map((part) => fixed(m(part), 1)).join(' / ')} | ${fixed(m('peak'))} | ${fixed(m('heapTotal'))} / ${fixed(m('heapUsed'))} | ${fixed(m('newSpace'), 1)} | ${fixed(m('oldSpace'))} | ${fixed(m('codeSpace'), 1)} | ${fixed(m('arrayBuffers'), 1)} | ${fixed(m('cpuPer1000'), 3)} | ${fixed(m('cpuPerGiB'), 2)} |`)
  }
  return lines.join('\n')
}

async function main () {
  const tools = detectTools()
  const directory = mkdtempSync(join(tmpdir(), 'ffp-memory-'))
  const processes = []
  try {
    const pki = makeOriginPki(directory)
    const origin = await startOrigin(tools.found.nginx, directory, pki.origin)
    processes.push(...origin.processes)
    const settings = { duration, connections: 32, warmupMs: 1, heyPath: tools.found.hey }
    const context = { directory, pki, maxTunnels: 20_000 }
    console.log(`# Proxy memory (${new Date().toISOString()}): ${runs} runs, ${duration} s per scenario, origin ${origin.kind}, http:// client ${settings.heyPath === undefined ? 'bench/load.mjs' : 'hey'}\n`)
    const results = Object.fromEntries(variants.map((v) => [v.label, []]))
    for (let run = 0; run < runs; run++) {
      for (const variant of variants) {
        const samples = await measure(variant, context, origin, settings)
        results[variant.label].push(samples)
        console.log(`run ${run + 1} ${variant.label}: ${samples.map((s) => `${s.phase} ${fixed(s.rss)}`).join(', ')} MiB RSS`)
      }
    }
    for (const variant of variants) console.log(`\n${table(`${variant.label}: ${[...variant.nodeArgs, ...Object.entries(variant.env).map(([k, v]) => `${k}=${v}`)].join(' ') || 'no Node options'}`, results[variant.label])}`)
    if (process.env.MEMORY_JSON) writeFileSync(process.env.MEMORY_JSON, JSON.stringify({ date: new Date().toISOString(), runs, duration, scenarios, variants, results }, null, 2) + '\n')
  } finally {
    for (const started of processes.reverse()) await stopProcess(started)
    rmSync(directory, { recursive: true, force: true })
  }
}

main().catch((error) => {
  console.error(error)
  process.exitCode = 1
})

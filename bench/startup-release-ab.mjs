// What the start-up's release of V8's heap (`releaseIdleMemory`, by default "start") costs a new
// process: fresh full bins of this checkout (the per-request suite's full configuration,
// bench/compare/peers.mjs, with the options `npm start` passes), one variant after the other in
// STARTUP_AB_PAIRS (6) rotations, each started, left idle 4 s (its idle RSS), then loaded with
// hey in three segments of 4 s, 32 keep-alive connections, http:// through the proxy to nginx
// (or bench/origin.mjs). Prints each process's idle RSS, its CPU per request (user + system from
// /proc/PID/stat over the 2xx answers) in each segment, the scavenges and mark-compacts V8 ran in
// each (`--trace-gc`, counted in the bin's stdout), and its RSS at the end; then the medians by
// variant. The first segment is where a process that has just given its heap back would pay.
//
//   npm run build && node bench/startup-release-ab.mjs
//   STARTUP_AB_VARIANTS='{"off":{"releaseIdleMemory":false},"start":{}}' STARTUP_AB_MODE=intercept node bench/startup-release-ab.mjs
//
// STARTUP_AB_VARIANTS: a JSON object of variant name to configuration keys added to the full
// configuration (default: `false` against the default). STARTUP_AB_MODE: `http` (GET
// http://127.0.0.1/small) or `intercept` (GET https://127.0.0.2/small, intercepted). Needs hey
// and openssl. STARTUP_AB_NODE_ARGS: a JSON object of variant name to Node options added to the
// shipped ones for that variant and `NAME=value` environment entries (one string, space-separated), e.g.
// STARTUP_AB_VARIANTS='{"shipped":{},"nomaglev":{}}' STARTUP_AB_NODE_ARGS='{"nomaglev":"--no-maglev"}'.
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { hey } from './bin-load.mjs'
import { runHey } from './compare/hey.mjs'
import { makeOriginPki, PLAIN_HOST, TLS_HOST, startOrigin } from './compare/origin.mjs'
import { BENCH_USER, oursAsRun } from './compare/peers.mjs'
import { cpuSeconds, memoryMiB, nodeOptionsAndEnv, stopProcess } from './compare/processes.mjs'
import { median } from './compare/report.mjs'
import { detectTools } from './compare/tools.mjs'
import { SHIPPED_NODE_ARGS } from './shipped-node-args.mjs'

const PAIRS = Number(process.env.STARTUP_AB_PAIRS ?? 6)
const MODE = process.env.STARTUP_AB_MODE ?? 'http'
const SEGMENTS = 3
const SEGMENT_SECONDS = 4
const IDLE_SECONDS = 4
const variants = JSON.parse(process.env.STARTUP_AB_VARIANTS ?? '{"off":{"releaseIdleMemory":false},"default":{}}')
const variantNodeArgs = JSON.parse(process.env.STARTUP_AB_NODE_ARGS ?? '{}')
for (const name of Object.keys(variantNodeArgs)) if (!(name in variants)) throw new Error(`STARTUP_AB_NODE_ARGS: "${name}" is not one of the variants`)
if (hey === undefined) throw new Error('hey is not installed (apt-get install hey)')
if (!['intercept', 'http'].includes(MODE)) throw new Error(`STARTUP_AB_MODE: "${MODE}" is neither intercept nor http`)

const directory = mkdtempSync(join(tmpdir(), 'ffp-startup-release-ab-'))
const pki = makeOriginPki(directory)
const processes = []

/** The collections V8 reported so far in a bin's stdout (`--trace-gc`). */
function collections (stdoutPath) {
  const text = readFileSync(stdoutPath, 'utf8')
  return { scavenges: (text.match(/: Scavenge/g) ?? []).length, markCompacts: (text.match(/: Mark-Compact/g) ?? []).length }
}

/** Starts one fresh bin of `name`, measures it idle and through the segments, and stops it. */
async function measure (name, run, load) {
  const own = join(directory, `${name}-${run}`)
  mkdirSync(own)
  const variantOptions = nodeOptionsAndEnv(variantNodeArgs[name] ?? '')
  const bin = await oursAsRun('full', { directory: own, pki, nodeArgs: [...SHIPPED_NODE_ARGS, ...variantOptions.nodeArgs, '--trace-gc'], env: variantOptions.env, accessLog: 'file', configKeys: variants[name] })
  processes.push(bin.started)
  const stdoutPath = join(own, 'access.log')
  await delay(IDLE_SECONDS * 1000)
  const idle = memoryMiB(bin.pid).rss
  const segments = []
  for (let segment = 0; segment < SEGMENTS; segment++) {
    const gcBefore = collections(stdoutPath)
    const cpuBefore = cpuSeconds(bin.pid)
    const result = await load(bin.port)
    const cpu = (cpuSeconds(bin.pid) - cpuBefore) * 1e6 / result.requests
    const gcAfter = collections(stdoutPath)
    const scavenges = gcAfter.scavenges - gcBefore.scavenges
    segments.push({ cpu, requests: result.requests, scavenges, markCompacts: gcAfter.markCompacts - gcBefore.markCompacts })
  }
  const end = memoryMiB(bin.pid).rss
  await stopProcess(bin.started)
  return { idle, segments, end }
}

try {
  const origin = await startOrigin(detectTools().found.nginx, directory, pki.origin)
  processes.push(...origin.processes)
  const target = MODE === 'http' ? `http://${PLAIN_HOST}:${origin.httpPort}/small` : `https://${TLS_HOST}:${origin.httpsPort}/small`
  const load = (port) => runHey(hey, target, port, SEGMENT_SECONDS, 32, true, BENCH_USER)
  const names = Object.keys(variants)
  const results = Object.fromEntries(names.map((name) => [name, []]))
  for (let pair = 0; pair < PAIRS; pair++) {
    // Rotated, so that no variant always runs first after the other's process.
    for (const name of [...names.slice(pair % names.length), ...names.slice(0, pair % names.length)]) {
      const result = await measure(name, pair, load)
      results[name].push(result)
      const segments = result.segments.map((s) => `${s.cpu.toFixed(1)} µs (${s.requests} req, ${s.scavenges} scavenges, ${s.markCompacts} mark-compacts)`).join(' | ')
      console.log(`${name.padEnd(10)} idle ${result.idle.toFixed(1)} MiB | ${segments} | end ${result.end.toFixed(1)} MiB`)
    }
  }
  console.log(`\nmedians over ${PAIRS} processes each, ${MODE}:`)
  for (const name of names) {
    const runs = results[name]
    const bySegment = Array.from({ length: SEGMENTS }, (_, i) => median(runs.map((r) => r.segments[i].cpu)).toFixed(1))
    console.log(`${name.padEnd(10)} idle ${median(runs.map((r) => r.idle)).toFixed(1)} MiB, CPU per request by segment ${bySegment.join(' / ')} µs, end ${median(runs.map((r) => r.end)).toFixed(1)} MiB`)
  }
} finally {
  for (const started of processes) await stopProcess(started)
  rmSync(directory, { recursive: true, force: true })
}

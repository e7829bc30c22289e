// A/B of Node options or configuration keys on warm processes: two bins of this checkout with the
// per-request suite's full configuration (bench/compare/peers.mjs, its access log into
// /dev/null), one with the options `npm start` passes (bench/shipped-node-args.mjs), the other
// with `NODE_OPTIONS_AB` added to them (Node options; `NAME=value` entries go to its
// environment instead) and `NODE_AB_CONFIG` (a JSON object) to the configuration's top level,
// run side by side against its origin (bench/origin.mjs). Each is warmed with hey for
// NODE_AB_WARM s (20), then the two alternate in NODE_AB_ROUNDS (8) rounds of NODE_AB_SECONDS
// (4) s, 32 connections, the order swapped every round. Prints each bin's CPU per request (user
// + system from /proc/PID/stat over the 2xx answers) per round, the medians of CPU, req/s and
// p99, the per-round ratio of the two, and each bin's RSS at the end. `bench/memory.mjs`
// measures fresh processes; this measures processes that have warmed, where what an option
// costs while the JIT is still compiling no longer shows. With NODE_AB_QUIET (s, default 0)
// both bins sit quiet that long after every pair of rounds, as bursty traffic leaves a proxy:
// the CPU a bin spends while quiet is then added to its next round's, and printed apart.
//
//   npm run build && NODE_OPTIONS_AB=--no-concurrent-recompilation NODE_AB_MODE=intercept node bench/node-options-ab.mjs
//   NODE_AB_CONFIG='{"releaseIdleMemory":false}' NODE_AB_QUIET=6 node bench/node-options-ab.mjs
//
// NODE_AB_MODE: `intercept` (GET https://127.0.0.2/small through the proxy, intercepted) or
// `http` (GET http://127.0.0.1/small). NODE_AB_CONNECTIONS (32) and NODE_AB_RATE (requests per
// second on each connection, hey's `-q`; unset: as fast as answered) set the load of the
// rounds (the warm-up is always at full rate): `NODE_AB_CONNECTIONS=6 NODE_AB_RATE=150` is a
// browser's rate. Needs hey and openssl.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { hey } from './bin-load.mjs'
import { runHey } from './compare/hey.mjs'
import { makeOriginPki, PLAIN_HOST, TLS_HOST, startOrigin } from './compare/origin.mjs'
import { BENCH_USER, oursAsRun } from './compare/peers.mjs'
import { cpuSeconds, memoryMiB, nodeOptionsAndEnv, stopProcess } from './compare/processes.mjs'
import { median } from './compare/report.mjs'
import { SHIPPED_NODE_ARGS } from './shipped-node-args.mjs'

const ROUNDS = Number(process.env.NODE_AB_ROUNDS ?? 8)
const SECONDS = Number(process.env.NODE_AB_SECONDS ?? 4)
const WARM = Number(process.env.NODE_AB_WARM ?? 20)
const CONNECTIONS = Number(process.env.NODE_AB_CONNECTIONS ?? 32)
const RATE = process.env.NODE_AB_RATE === undefined ? undefined : Number(process.env.NODE_AB_RATE)
const MODE = process.env.NODE_AB_MODE ?? 'intercept'
const QUIET = Number(process.env.NODE_AB_QUIET ?? 0)
const options = (process.env.NODE_OPTIONS_AB ?? '').trim()
const { nodeArgs: extra, env: extraEnv } = nodeOptionsAndEnv(options)
const configKeys = JSON.parse(process.env.NODE_AB_CONFIG ?? '{}')
if (options === '' && Object.keys(configKeys).length === 0) throw new Error('NODE_OPTIONS_AB or NODE_AB_CONFIG: the Node options or configuration keys to compare with the shipped ones')
if (hey === undefined) throw new Error('hey is not installed (apt-get install hey)')
if (!['intercept', 'http'].includes(MODE)) throw new Error(`NODE_AB_MODE: "${MODE}" is neither intercept nor http`)

const directory = mkdtempSync(join(tmpdir(), 'ffp-node-options-ab-'))
const pki = makeOriginPki(directory)
const processes = []

/** The full bin with `nodeArgs`, in a folder of its own (its configuration file is named by variant). */
async function startBin (label, nodeArgs, keys = {}, env = {}) {
  const own = join(directory, label)
  mkdirSync(own)
  const bin = await oursAsRun('full', { directory: own, pki, nodeArgs, env, accessLog: 'null', configKeys: keys })
  processes.push(bin.started)
  return bin
}

try {
  const origin = await startOrigin(undefined, directory, pki.origin)
  processes.push(...origin.processes)
  const target = MODE === 'http' ? `http://${PLAIN_HOST}:${origin.httpPort}/small` : `https://${TLS_HOST}:${origin.httpsPort}/small`
  // The warm-up (`limited` false) runs at full rate on 32 connections whatever the rounds' load.
  const load = (port, seconds, limited = true) => runHey(hey, target, port, seconds, limited ? CONNECTIONS : 32, true, BENCH_USER, limited ? RATE : undefined)
  const variantName = [...(options === '' ? [] : [options]), ...(Object.keys(configKeys).length === 0 ? [] : [JSON.stringify(configKeys)])].join(' ')
  const bins = { shipped: await startBin('shipped', SHIPPED_NODE_ARGS), [variantName]: await startBin('variant', [...SHIPPED_NODE_ARGS, ...extra], configKeys, extraEnv) }
  const names = Object.keys(bins)
  for (const name of names) await load(bins[name].port, WARM, false)
  const runs = Object.fromEntries(names.map((name) => [name, []]))
  // The CPU each bin spent since its last round ended (while the other ran, and while quiet).
  const lastEnd = Object.fromEntries(names.map((name) => [name, cpuSeconds(bins[name].pid)]))
  const rssBefore = Object.fromEntries(names.map((name) => [name, []]))
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of round % 2 === 0 ? names : [...names].reverse()) {
      const { pid, port } = bins[name]
      rssBefore[name].push(memoryMiB(pid).rss)
      const before = cpuSeconds(pid)
      const result = await load(port, SECONDS)
      const after = cpuSeconds(pid)
      const perRequest = (seconds) => seconds * 1e6 / result.requests
      runs[name].push({ cpu: perRequest(after - before), between: perRequest(before - lastEnd[name]), reqPerSec: result.reqPerSec, p99: result.p99 })
      lastEnd[name] = after
    }
    if (QUIET > 0) await delay(QUIET * 1000)
  }
  console.log(`${MODE}, Node ${process.version}, ${WARM} s warm-up, ${ROUNDS} rounds of ${SECONDS} s${QUIET > 0 ? `, ${QUIET} s quiet after each pair` : ''}, ${CONNECTIONS} connections (hey${RATE === undefined ? '' : `, at most ${RATE} requests per second on each`})\n`)
  for (const name of names) {
    const r = runs[name]
    console.log(`${name}: CPU µs per request ${r.map((x) => x.cpu.toFixed(1)).join(' / ')}, median ${median(r.map((x) => x.cpu)).toFixed(1)}; between rounds, per request of the next ${median(r.map((x) => x.between)).toFixed(1)}; req/s ${median(r.map((x) => x.reqPerSec)).toFixed(0)}; p99 ${median(r.map((x) => x.p99)).toFixed(1)} ms; RSS before each round ${rssBefore[name].map((x) => x.toFixed(0)).join(' / ')}, at the end ${memoryMiB(bins[name].pid).rss.toFixed(0)} MiB`)
  }
  const ratios = runs[names[1]].map((x, i) => x.cpu / runs[names[0]][i].cpu)
  console.log(`CPU per request, ${names[1]} over shipped, per round: ${ratios.map((x) => x.toFixed(2)).join(' / ')}, median ${median(ratios).toFixed(2)}x`)
} finally {
  for (const started of processes.reverse()) await stopProcess(started)
  rmSync(directory, { recursive: true, force: true })
}

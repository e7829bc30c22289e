// Bytes allocated per request: the bin with the per-request suite's full configuration (and
// its variants), or a floor script, under hey (32 keep-alive connections) through http:// or
// intercepted requests, sampled by V8's heap profiler (bench/allocation-sampler.cjs) over
// ALLOCATION_SECONDS after a 2 s warm-up. Allocation moves by well under 1% between runs of one
// build where CPU per request moves by a third on a shared machine, so small cuts are measured
// by it (CPU checked afterwards). Each path is a work tree with dist/ built (`.`, or
// `../before`), `TREE@warn` for that tree's bin at log level warn, `TREE@minimal` for it with
// the suite's minimal configuration (no interception, no header rule; `TREE@minimal,warn` for
// both), or a bench/floor-*.mjs script.
//
//   npm run build && node bench/allocation.mjs . ../before bench/floor-fastify-proxy.mjs
//   ALLOCATION_MODE=intercept ALLOCATION_TOP=25 npm run bench:allocation -- . bench/floor-fastify-intercept.mjs
//
// Knobs: ALLOCATION_MODE (http, or intercept), ALLOCATION_RUNS (2; the order of the paths swaps
// every run), ALLOCATION_SECONDS (4), ALLOCATION_TOP (0: the functions that allocated most, per
// request). Needs hey; nginx is the origin when installed, bench/origin.mjs otherwise.
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { runHey } from './compare/hey.mjs'
import { stopProcess } from './compare/processes.mjs'
import { loadBench, pathStarter } from './load-paths.mjs'
import { locate } from './compare/tools.mjs'
import { SHIPPED_NODE_ARGS } from './shipped-node-args.mjs'

const paths = process.argv.slice(2)
if (paths.length === 0) throw new Error('usage: node bench/allocation.mjs <tree[@level] | bench/floor-*.mjs> ...')
const MODE = process.env.ALLOCATION_MODE ?? 'http'
const RUNS = Number(process.env.ALLOCATION_RUNS ?? 2)
const SECONDS = Number(process.env.ALLOCATION_SECONDS ?? 4)
const TOP = Number(process.env.ALLOCATION_TOP ?? 0)
const hey = locate(['hey'])
if (hey === undefined) throw new Error('hey is not installed (apt-get install hey)')

const { directory, destinationCa, operatorCa, origin, url } = await loadBench('allocation', MODE)
const sampler = ['--require', resolve(import.meta.dirname, 'allocation-sampler.cjs')]

const start = pathStarter({ directory, operatorCa, destinationCa, nodeArgs: [...SHIPPED_NODE_ARGS, ...sampler] })

console.log(`bytes allocated per ${MODE === 'http' ? 'http://' : 'intercepted'} request (hey, 32 connections, ${SECONDS} s sampled), Node ${process.version}`)
for (let run = 0; run < RUNS; run++) {
  for (const path of run % 2 === 0 ? paths : [...paths].reverse()) {
    const { started, port, user } = await start(path)
    await runHey(hey, url, port, 2, 32, true, user)
    const { pid } = started.child
    process.kill(pid, 'SIGUSR2')
    const { requests } = await runHey(hey, url, port, SECONDS, 32, true, user)
    process.kill(pid, 'SIGUSR2')
    const file = `/tmp/ffp-allocation-${pid}.json`
    while (!existsSync(file)) await sleep(100)
    await sleep(100)
    const { total, top } = JSON.parse(readFileSync(file, 'utf8'))
    rmSync(file)
    console.log(`${path} (run ${run + 1}): ${Math.round(total / requests)} bytes per request (${requests} requests)`)
    for (const [name, bytes] of top.slice(0, TOP)) console.log(`  ${String(Math.round(bytes / requests)).padStart(6)}  ${name}`)
    await stopProcess(started)
  }
}
for (const child of origin.processes) await stopProcess(child)
rmSync(directory, { recursive: true, force: true })

// What earlier load leaves behind for later CONNECTs (`node bench/after-load.mjs` after
// `npm run build`): the bin with the per-request suite's full configuration (log level info,
// access log into a file), twice per variant of Node options. One of the two first serves
// keep-alive load through hey (AFTER_LOAD: `intercept`, GET https://127.0.0.2/small
// intercepted, or `http`, http:// forwarding), the other none. Then every process answers the
// CONNECT-cost client of the per-request suite (32 clients: CONNECT, read the answer, close) in
// alternating rounds. Prints each process's median CPU per answered CONNECT, its RSS after the
// rounds and its peak (VmHWM).
//
// V8 allocates an object literal's objects in the old generation once it has seen enough of
// them outlive young collections (allocation-site pretenuring); keep-alive load can teach it
// that of a connection's objects, and the short connections after it then pay for it.
//
// Knobs: AFTER_LOAD_VARIANTS (JSON object name -> Node options; default the shipped options,
// bench/shipped-node-args.mjs, against the same without --no-allocation-site-pretenuring),
// AFTER_LOAD (intercept), AFTER_LOAD_RUNS (hey runs of 3 s, 5), AFTER_LOAD_ROUNDS (8),
// AFTER_LOAD_SECONDS (per round, 2). Needs hey; nginx is the origin when installed.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connectLoad } from './compare/connect-client.mjs'
import { runHey } from './compare/hey.mjs'
import { makeOriginPki, PLAIN_HOST, startOrigin, TLS_HOST } from './compare/origin.mjs'
import { BENCH_AUTHORIZATION, BENCH_USER, SUITE_PEERS } from './compare/peers.mjs'
import { cpuSeconds, memoryMiB, stopProcess } from './compare/processes.mjs'
import { median } from './compare/report.mjs'
import { detectTools } from './compare/tools.mjs'
import { SHIPPED_NODE_ARGS } from './shipped-node-args.mjs'

const variants = JSON.parse(process.env.AFTER_LOAD_VARIANTS ?? JSON.stringify({
  shipped: SHIPPED_NODE_ARGS,
  pretenuring: SHIPPED_NODE_ARGS.filter((option) => option !== '--no-allocation-site-pretenuring')
}))
const load = process.env.AFTER_LOAD ?? 'intercept'
if (load !== 'intercept' && load !== 'http') throw new Error(`AFTER_LOAD: "${load}" is neither intercept nor http`)
const loadRuns = Number(process.env.AFTER_LOAD_RUNS ?? 5)
const rounds = Number(process.env.AFTER_LOAD_ROUNDS ?? 8)
const seconds = Number(process.env.AFTER_LOAD_SECONDS ?? 2)
const fullBin = SUITE_PEERS.find((peer) => peer.name === 'ours-full')

const tools = detectTools().found
if (tools.hey === undefined) throw new Error('hey (Debian package hey) is needed for the load')
const directory = mkdtempSync(join(tmpdir(), 'ffp-after-load-'))
const started = []
try {
  const pki = makeOriginPki(directory)
  const origin = await startOrigin(tools.nginx, directory, pki.origin)
  started.push(...origin.processes)
  const proxies = []
  for (const [variant, nodeArgs] of Object.entries(variants)) {
    for (const loaded of [true, false]) {
      const proxy = await fullBin.start({ directory: mkdtempSync(join(directory, 'proxy-')), pki, nodeArgs, accessLog: 'file' })
      started.push(proxy.started)
      proxies.push({ name: `${variant}, ${loaded ? `after ${load} load` : 'fresh'}`, loaded, proxy, runs: [] })
    }
  }
  console.log(`# CONNECTs after ${load} load (${new Date().toISOString()}): Node ${process.version}, origin ${origin.kind}, ${loadRuns} hey runs of 3 s, then ${rounds} alternating rounds of ${seconds} s\n`)
  const url = load === 'intercept' ? `https://${TLS_HOST}:${origin.httpsPort}/small` : `http://${PLAIN_HOST}:${origin.httpPort}/small`
  const loadedOnes = proxies.filter((p) => p.loaded)
  for (let run = 0; run < loadRuns; run++) {
    for (const p of run % 2 === 0 ? loadedOnes : [...loadedOnes].reverse()) {
      const result = await runHey(tools.hey, url, p.proxy.port, 3, 32, true, BENCH_USER)
      console.log(`load ${run + 1} ${p.name}: ${Math.round(result.reqPerSec)} req/s, errors ${result.errors}`)
    }
  }
  const target = `${PLAIN_HOST}:${origin.httpPort}`
  for (const p of proxies) await connectLoad({ proxyPort: p.proxy.port, target, seconds: 1, parallel: 32, authorization: BENCH_AUTHORIZATION })
  for (let round = 0; round < rounds; round++) {
    for (const p of round % 2 === 0 ? proxies : [...proxies].reverse()) {
      const before = cpuSeconds(p.proxy.pid)
      const result = await connectLoad({ proxyPort: p.proxy.port, target, seconds, parallel: 32, authorization: BENCH_AUTHORIZATION })
      if (result.answered === 0) throw new Error(`${p.name}: no CONNECT answered (${result.firstError})`)
      p.runs.push((cpuSeconds(p.proxy.pid) - before) / result.answered * 1e6)
    }
  }
  console.log('\n| process | CPU µs per CONNECT | each round | RSS after (MiB) | peak (MiB) |\n|---|---|---|---|---|')
  for (const p of proxies) {
    const { rss, peak } = memoryMiB(p.proxy.pid)
    console.log(`| ${p.name} | ${median(p.runs).toFixed(0)} | ${p.runs.map((us) => us.toFixed(0)).join(' / ')} | ${rss.toFixed(0)} | ${peak.toFixed(0)} |`)
  }
} finally {
  for (const child of started.reverse()) await stopProcess(child)
  rmSync(directory, { recursive: true, force: true })
}

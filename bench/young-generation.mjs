// What a cap on V8's young generation does to the ready-to-run server's CPU and memory, against
// how long destinations take to answer: `node bench/young-generation.mjs` after `npm run build`.
// Each variant (Node options the bin is started with) runs in its own process; `hey` (Go's
// net/http, package `hey`) sends http:// requests through each in turn, the order swapped every
// round, to bench/origin.mjs answering at once and after ORIGIN_DELAY_MS. A request in flight
// keeps its objects alive: when answers take milliseconds, objects outlive a small young
// generation's collections and are copied into the old one. Prints the median proxy CPU per
// request and RSS after each run.
// Knobs: YG_VARIANTS (JSON object name -> Node options; default none vs --max-semi-space-size=4),
// YG_DELAYS_MS (0,20), YG_CONNECTIONS (32,256), YG_ROUNDS (4), YG_SECONDS (4).
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { cpuSeconds, freePort, memoryMiB, startProcess, stopProcess, waitForPort } from './compare/processes.mjs'

const here = (file) => fileURLToPath(new URL(file, import.meta.url))
const variants = JSON.parse(process.env.YG_VARIANTS ?? '{"none":[],"semi4":["--max-semi-space-size=4"]}')
const delays = (process.env.YG_DELAYS_MS ?? '0,20').split(',').map(Number)
const connections = (process.env.YG_CONNECTIONS ?? '32,256').split(',').map(Number)
const rounds = Number(process.env.YG_ROUNDS ?? 4)
const seconds = Number(process.env.YG_SECONDS ?? 4)

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const directory = mkdtempSync(join(tmpdir(), 'ffp-young-generation-'))
const started = []
try {
  const origins = {}
  for (const delay of delays) {
    const port = await freePort()
    const origin = startProcess(process.execPath, [here('./origin.mjs')], { env: { ...process.env, ORIGIN_PORT: String(port), ORIGIN_DELAY_MS: String(delay) } })
    started.push(origin)
    await waitForPort('127.0.0.1', port, { ...origin, name: 'bench/origin.mjs' })
    origins[delay] = port
  }
  const bins = {}
  for (const [name, nodeArgs] of Object.entries(variants)) {
    const port = await freePort()
    const config = join(directory, `${name}.json`)
    writeFileSync(config, JSON.stringify({ listen: [{ host: '127.0.0.1', port }], destinations: { allowedPorts: '*', allowedNetworks: ['127.0.0.0/8'] }, log: { level: 'warn' } }))
    const bin = startProcess(process.execPath, [...nodeArgs, here('../dist/lib/cli/main.js'), '--config', config], { env: { ...process.env, NODE_ENV: 'production' } })
    started.push(bin)
    await waitForPort('127.0.0.1', port, { ...bin, name: `the ready-to-run server (${name})` })
    bins[name] = { pid: bin.child.pid, port }
  }
  console.log(`ready-to-run server, http:// through hey; ${rounds} rounds of ${seconds} s; medians (each round in brackets)\n`)
  console.log('| destination answers after | connections | variant | proxy CPU µs per request | RSS after the run, MiB |')
  console.log('|---|---|---|---|---|')
  for (const delay of delays) {
    for (const concurrency of connections) {
      const results = {}
      for (let round = 0; round < rounds; round++) {
        const names = Object.keys(bins)
        if (round % 2 === 1) names.reverse()
        for (const name of names) {
          const { pid, port } = bins[name]
          const before = cpuSeconds(pid)
          const out = execFileSync('hey', ['-z', `${seconds}s`, '-c', String(concurrency), '-x', `http://127.0.0.1:${port}`, `http://127.0.0.1:${origins[delay]}/small`], { encoding: 'utf8' })
          const answered = Number(/\[200\]\s+(\d+) responses/.exec(out)?.[1] ?? 0)
          const result = (results[name] ??= { cpu: [], rss: [] })
          result.cpu.push((cpuSeconds(pid) - before) * 1e6 / answered)
          result.rss.push(memoryMiB(pid).rss)
        }
      }
      for (const [name, { cpu, rss }] of Object.entries(results)) {
        console.log(`| ${delay} ms | ${concurrency} | ${name} | ${median(cpu).toFixed(1)} [${cpu.map((value) => value.toFixed(0)).join(', ')}] | ${median(rss).toFixed(0)} [${rss.map((value) => value.toFixed(0)).join(', ')}] |`)
      }
    }
  }
} finally {
  for (const one of started.reverse()) await stopProcess(one)
  rmSync(directory, { recursive: true, force: true })
}

// What a build change does to the idle bin: fresh bins of two trees (checkouts with dist/
// built), the per-request suite's full configuration (interception with an operator CA, a
// header rule), the Node options `npm start` passes, started one after the other in
// IDLE_AB_RUNS (6) alternating pairs. For each process: the time from spawn to its
// "listening" log line, then, IDLE_AB_SETTLE_MS (1500) later, its live heap after a full
// collection and its RSS (bench/memory-hook.cjs, preloaded, answers SIGUSR2). Prints every
// process and the medians by tree. The live heap is the steady figure: what the loaded code and
// its state hold, the same from one process to the next.
//
//   npm run build && node bench/idle-build-ab.mjs <tree-before> [<tree-after> = this checkout]
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { binConfig } from './load-paths.mjs'
import { makeCa } from './pki.mjs'
import { SHIPPED_NODE_ARGS } from './shipped-node-args.mjs'
import { median } from './compare/report.mjs'

const RUNS = Number(process.env.IDLE_AB_RUNS ?? 6)
const SETTLE_MS = Number(process.env.IDLE_AB_SETTLE_MS ?? 1500)
const here = resolve(import.meta.dirname, '..')
const trees = process.argv.length > 3 ? process.argv.slice(2, 4).map((tree) => resolve(tree)) : [resolve(process.argv[2] ?? ''), here]
if (process.argv[2] === undefined) throw new Error('usage: node bench/idle-build-ab.mjs <tree-before> [<tree-after>]')

// Answers SIGUSR2 with `memory-usage <JSON>` on stderr, after a full collection (MEMORY_HOOK_GC=1).
const HOOK = fileURLToPath(new URL('./memory-hook.cjs', import.meta.url))

const directory = mkdtempSync(join(tmpdir(), 'ffp-idle-build-ab-'))
try {
  const ca = makeCa(directory, 'operator-ca')
  const configPath = join(directory, 'full.json')
  writeFileSync(configPath, JSON.stringify(binConfig(0, 'info', false, { operatorCa: ca, destinationCa: ca })))

  /** One fresh bin of `tree`: start-up time, then its idle live heap and RSS (MiB). */
  async function measure (tree) {
    const started = performance.now()
    const args = [...SHIPPED_NODE_ARGS, '--expose-gc', '--require', HOOK, join(tree, 'dist', 'lib', 'cli', 'main.js'), '--config', configPath]
    const child = spawn(process.execPath, args, { env: { ...process.env, NODE_ENV: 'production', MEMORY_HOOK_GC: '1' }, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stderr.on('data', (chunk) => { stderr += chunk })
    const listeningMs = await new Promise((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`${tree}: the bin exited (${code}) before listening: ${stderr}`)))
      child.stdout.on('data', (chunk) => {
        stdout += chunk
        if (stdout.includes('listening')) resolve(performance.now() - started)
      })
    })
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS))
    child.kill('SIGUSR2')
    while (!stderr.includes('memory-usage ')) await once(child.stderr, 'data')
    const { heapUsed, rss } = JSON.parse(/memory-usage (\{.*\})\n/.exec(stderr)[1])
    child.kill('SIGTERM')
    await once(child, 'exit')
    return { listeningMs, heapMiB: heapUsed, rssMiB: rss }
  }

  const results = new Map(trees.map((tree) => [tree, []]))
  console.log(`idle bin, full configuration, Node ${process.version}, ${RUNS} processes per tree, alternating`)
  for (let run = 0; run < RUNS; run++) {
    for (const tree of run % 2 === 0 ? trees : [...trees].reverse()) {
      const row = await measure(tree)
      results.get(tree).push(row)
      console.log(`${tree}: listening after ${row.listeningMs.toFixed(0)} ms, live heap ${row.heapMiB.toFixed(2)} MiB, RSS ${row.rssMiB.toFixed(1)} MiB`)
    }
  }
  console.log('\nmedians:')
  for (const [tree, rows] of results) {
    const of = (key) => median(rows.map((row) => row[key]))
    console.log(`${tree}: listening after ${of('listeningMs').toFixed(0)} ms, live heap ${of('heapMiB').toFixed(2)} MiB, RSS ${of('rssMiB').toFixed(1)} MiB`)
  }
} finally {
  rmSync(directory, { recursive: true, force: true })
}

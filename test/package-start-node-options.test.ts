import { test } from 'tap'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { parseDockerfile, type DockerStage } from './helpers/dockerfile'
import { childEnv } from './helpers/child-node'

const ROOT = join(__dirname, '..')
const run = promisify(execFile)

/** The Node options the benchmarks measure as the shipped server's (bench/shipped-node-args.mjs). */
async function shippedNodeArgs (): Promise<string[]> {
  return (await import(join(ROOT, 'bench/shipped-node-args.mjs')) as { SHIPPED_NODE_ARGS: string[] }).SHIPPED_NODE_ARGS
}

/** What `node ...options -e script` writes to stdout. */
async function nodeOutput (options: string[], script: string): Promise<string> {
  return (await run(process.execPath, [...options, '-e', script], { env: childEnv(), maxBuffer: 16 << 20 })).stdout
}

test('npm start and the container image run the server with the Node options the benchmarks measure as shipped (bench/shipped-node-args.mjs): V8\'s young generation capped at 16 MiB, no lower, Maglev and Sparkplug off', async (t) => {
  const shipped = await shippedNodeArgs()
  const start = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start
  // `exec`: the shell npm runs the script in becomes node, so the signals npm forwards reach it.
  t.equal(start, ['exec', 'node', ...shipped, 'dist/lib/cli/main.js'].join(' '))
  const image = parseDockerfile(readFileSync(join(ROOT, 'deploy', 'Dockerfile'), 'utf8')).at(-1) as DockerStage
  t.same(image.entrypoint, ['node', ...shipped, 'dist/lib/cli/main.js'], 'the image\'s ENTRYPOINT passes the same options')
  // Node 24 lets the young generation grow to 64 MiB, Node 20 and 22 to 32: 16 keeps the
  // memory after load down with the same CPU per request. A smaller one costs 50 to 90% more
  // CPU once destinations take any time to answer (bench/young-generation.mjs).
  t.same(shipped.filter((option) => option.startsWith('--max-semi-space-size')), ['--max-semi-space-size=8'])
  // After keep-alive load V8 would allocate every new connection's objects in the old
  // generation: later CONNECTs cost about a seventh more CPU and the peak memory 35 MiB more.
  t.ok(shipped.includes('--no-allocation-site-pretenuring'), 'pretenuring is off')
  // Node 24 runs V8's mid-tier compiler, Maglev, whose compilations left 13 to 26 MiB of freed
  // memory in glibc's arenas after load; Node 20 and 22 run without it.
  t.ok(shipped.includes('--no-maglev'), 'Maglev is off')
  // Sparkplug's baseline code is never dropped: the start-up's functions kept theirs for good,
  // 2 to 3 MiB after load; hot code is optimized by TurboFan either way.
  t.ok(shipped.includes('--no-sparkplug'), 'Sparkplug is off')
})

test('the Node running the tests starts with the shipped Node options: an option it no longer knew would stop npm start and the image at once', async (t) => {
  const shipped = await shippedNodeArgs()
  const { stdout } = await run(process.execPath, [...shipped, '-e', 'process.stdout.write(JSON.stringify(process.execArgv))'], { env: childEnv() })
  t.same((JSON.parse(stdout) as string[]).slice(0, shipped.length), shipped)
  // Node refuses these three in NODE_OPTIONS, which is why the docs say to put them on the command line.
  for (const option of ['--no-allocation-site-pretenuring', '--no-maglev', '--no-sparkplug']) {
    const refused = await run(process.execPath, ['-e', '0'], { env: { ...childEnv(), NODE_OPTIONS: option } }).then(() => null, (error: Error) => error)
    t.match(refused?.message, /not allowed in NODE_OPTIONS/, option)
  }
})

test('the shipped Node options take effect: V8 optimizes hot code with TurboFan only, never with Maglev', async (t) => {
  const hot = [
    'function add (a, b) { return { sum: a.v + b.v } }',
    'let total = 0',
    'for (let i = 0; i < 2e6; i++) total += add({ v: i }, { v: 1 }).sum',
    'process.stdout.write(String(total))'
  ].join('\n')
  /** The compilers V8 named as targets while optimizing the loop above (`--trace-opt`). */
  const targets = async (options: string[]): Promise<Set<string>> => {
    const stdout = await nodeOutput([...options, '--trace-opt'], hot)
    return new Set([...stdout.matchAll(/target (MAGLEV|TURBOFAN\w*)/g)].map((match) => match[1] ?? ''))
  }
  const shipped = await targets(await shippedNodeArgs())
  t.ok([...shipped].some((target) => target.startsWith('TURBOFAN')), 'the loop was optimized, so the trace can name a compiler')
  t.notOk(shipped.has('MAGLEV'), 'nothing compiled by Maglev')
  // Node 24's V8 runs Maglev by default, Node 20's and 22's do not. On Node 24 the check below
  // shows that the one above can fail; on the older two both runs compile with TurboFan alone.
  if (Number(process.versions.node.split('.')[0]) >= 24) t.ok((await targets([])).has('MAGLEV'), 'without the options Node 24 compiles with Maglev')
})

test('the shipped Node options take effect: V8 compiles no baseline (Sparkplug) code, even for functions called often', async (t) => {
  const warm = [
    'function next (n) { return n + 1 }',
    'let n = 0',
    'for (let i = 0; i < 50000; i++) n = next(n)',
    'process.stdout.write(String(n))'
  ].join('\n')
  /** The functions V8 reported compiling to baseline code (`--trace-baseline-batch-compilation`). */
  const baselineLines = async (options: string[]): Promise<number> => {
    const stdout = await nodeOutput([...options, '--trace-baseline-batch-compilation'], warm)
    return stdout.split('\n').filter((line) => /baseline/i.test(line)).length
  }
  t.equal(await baselineLines(await shippedNodeArgs()), 0, 'nothing compiled to baseline code')
  t.ok(await baselineLines([]) > 0, 'without the options the same run compiles baseline code, so the check above can fail')
})

test('the shipped Node options take effect: a process started with them ends a run of short-lived allocations with a young generation of 16 MiB, not more', async (t) => {
  const allocate = [
    "const v8 = require('node:v8')",
    'let kept = []',
    'for (let i = 0; i < 3e6; i++) { kept.push({ i, list: [i] }); if (kept.length > 20000) kept = [] }',
    "process.stdout.write(String(v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space').space_size))"
  ].join('\n')
  const newSpace = async (options: string[]): Promise<number> => Number(await nodeOutput(options, allocate))
  const MiB = 1024 * 1024
  t.equal(await newSpace(await shippedNodeArgs()), 16 * MiB, 'capped at 16 MiB')
  t.ok(await newSpace([]) > 16 * MiB, 'without the options the same run grows it past 16 MiB, so the check above can fail')
})

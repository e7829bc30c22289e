import { test, type Test } from 'tap'
import { spawn } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join } from 'node:path'
import { BUILT_BIN, outputOf, type BinProcess } from './helpers/cli-bin'
import { childEnv } from './helpers/child-node'
import { closedPort } from './helpers/closed-port'
import { nonLocalHosts, runnableBlocks, withPorts, type RunnableBlock } from './helpers/runnable-docs'
import { within } from './helpers/within'

// Runs the shell blocks of README.md and docs/*.md marked ```sh runnable, as docs/development.md
// describes: each file's blocks in order, in one scratch folder where the built package is
// installed as npm would (`npx forward-proxy` finds it there), against loopback only. Needs `npm run build` (npm test's pretest runs it).

const ROOT = join(__dirname, '..')
const FILES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).sort().map((name) => `docs/${name}`)]
const FOREGROUND_LIMIT_MS = 30_000
const READY_LIMIT_MS = 20_000

/** A scratch folder with the package installed in node_modules, as `npm install fastify-forward-proxy` lays it out. */
function scratchInstall (t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'ffp-docs-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true })
  symlinkSync(ROOT, join(dir, 'node_modules', 'fastify-forward-proxy'))
  // npm links the bin and marks it executable; the build output is not, so a shim runs it.
  const bin = join(dir, 'node_modules', '.bin', 'forward-proxy')
  writeFileSync(bin, `#!/bin/sh\nexec node ${JSON.stringify(join(dir, 'node_modules', 'fastify-forward-proxy', 'dist', 'lib', 'cli', 'main.js'))} "$@"\n`)
  chmodSync(bin, 0o755)
  return dir
}

/** The environment of a block: no proxy of the machine's, no registry (npx must find the installed bin), no curl configuration. */
function blockEnv (dir: string): NodeJS.ProcessEnv {
  return childEnv({
    HTTP_PROXY: undefined,
    HTTPS_PROXY: undefined,
    ALL_PROXY: undefined,
    NO_PROXY: undefined,
    http_proxy: undefined,
    https_proxy: undefined,
    all_proxy: undefined,
    no_proxy: undefined,
    FORWARD_PROXY_CONFIG: undefined,
    // The Node that runs the suite runs the blocks' `node` and `npx` too (CI runs it on several).
    PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`,
    CURL_HOME: dir,
    npm_config_offline: 'true',
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false'
  })
}

/** Starts `bash` on a block in its own process group (so that everything it starts can be stopped together). */
function startBlock (block: RunnableBlock, dir: string): BinProcess {
  const child = spawn('bash', ['-c', `set -euo pipefail\n${block.code}`], { cwd: dir, env: blockEnv(dir), detached: true })
  child.stdin.end()
  return outputOf(child)
}

/** Stops a block's process group: SIGTERM, then SIGKILL after 5 s. */
async function stopGroup (run: BinProcess): Promise<void> {
  const signal = (name: NodeJS.Signals): void => {
    try { process.kill(-(run.child.pid ?? 0), name) } catch { /* the group is gone */ }
  }
  signal('SIGTERM')
  const killer = setTimeout(() => signal('SIGKILL'), 5000)
  await run.exited
  clearTimeout(killer)
  signal('SIGKILL')
}

/** Resolves once 127.0.0.1:port accepts a connection; rejects when the block exits first. */
async function acceptsConnections (port: number, run: BinProcess): Promise<void> {
  let exited = false
  void run.exited.then(() => { exited = true })
  const deadline = Date.now() + READY_LIMIT_MS
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => { socket.destroy(); resolve(true) })
      socket.on('error', () => resolve(false))
    })
    if (open) return
    if (exited) throw new Error('the block exited before its port accepted connections')
    if (Date.now() > deadline) throw new Error(`port ${port} accepted no connection within ${READY_LIMIT_MS} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

function described (block: RunnableBlock, run: BinProcess): string {
  return `${block.file}:${block.line}\n--- block ---\n${block.code}\n--- stdout ---\n${run.stdout()}\n--- stderr ---\n${run.stderr()}`
}

/** Runs a file's blocks in order in one scratch folder; background blocks run until the end. */
async function runFile (t: Test, blocks: readonly RunnableBlock[]): Promise<void> {
  const ports = new Map<number, number>()
  for (const block of blocks) {
    if (block.background !== undefined && !ports.has(block.background)) ports.set(block.background, await closedPort())
  }
  const dir = scratchInstall(t)
  const servers: BinProcess[] = []
  t.teardown(async () => { await Promise.all(servers.map(stopGroup)) })
  for (const block of withPorts(blocks, ports)) {
    const run = startBlock(block, dir)
    if (block.background !== undefined) {
      servers.push(run)
      const ready = await within(acceptsConnections(block.background, run), 'readiness', READY_LIMIT_MS + 1000).then(() => true, (error: Error) => { t.fail(`${error.message}\n${described(block, run)}`); return false })
      if (!ready) return
      t.pass(`${block.file}:${block.line} started in the background, listening`)
      continue
    }
    const code = await within(run.exited, `${block.file}:${block.line} to finish`, FOREGROUND_LIMIT_MS).catch(() => 'timeout')
    await stopGroup(run)
    if (code !== 0) {
      t.fail(`${block.file}:${block.line} exits 0 (got ${String(code)})\n${described(block, run)}`)
      return
    }
    t.pass(`${block.file}:${block.line} exits 0`)
  }
}

test('docs: README\'s five-minute tour and docs/secrets.md\'s walk-through are marked runnable', async (t) => {
  t.ok(runnableBlocks(join(ROOT, 'README.md'), 'README.md').length >= 3, 'the tour: server, origin, requests')
  t.ok(runnableBlocks(join(ROOT, 'docs/secrets.md'), 'docs/secrets.md').length >= 3, 'the walk-through: files, servers, the sandbox')
})

test('docs: every URL in a runnable block is loopback, or a private address shown refused', async (t) => {
  for (const file of FILES) {
    for (const block of runnableBlocks(join(ROOT, file), file)) t.strictSame(nonLocalHosts(block.code), [], `${file}:${block.line} sends nothing beyond this machine`)
  }
})

for (const file of FILES) {
  const blocks = runnableBlocks(join(ROOT, file), file)
  if (blocks.length === 0) continue
  test(`docs: the runnable blocks of ${file} run as written, against the built package`, async (t) => {
    if (!existsSync(BUILT_BIN)) {
      t.fail(`${BUILT_BIN} is missing: run "npm run build" first`)
      return
    }
    if (blocks.some((block) => nonLocalHosts(block.code).length > 0)) {
      t.fail('not run: a block would reach beyond this machine')
      return
    }
    await runFile(t, blocks)
  })
}

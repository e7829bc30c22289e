import { test } from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { BUILT_BIN, listeningUrls, outputOf } from './helpers/cli-bin'
import { childEnv } from './helpers/child-node'
import { childPids } from './helpers/cli-workers'
import { eventually } from './helpers/eventually'

const ROOT = join(__dirname, '..')

/** The process under `pid` (itself included) whose command line runs the built bin (Linux /proc). */
function binUnder (pid: number): number | undefined {
  const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
  if (command.includes('dist/lib/cli/main.js') && !command.startsWith('sh')) return pid
  for (const child of childPids(pid)) {
    const found = binUnder(child)
    if (found !== undefined) return found
  }
  return undefined
}

/** True while `pid` runs: it exists and is not a zombie waiting for its parent. */
function isRunning (pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

test('npm start: SIGTERM to the npm process stops the proxy it started (npm forwards it to the script, which is node itself); no node is left running', async (t) => {
  if (!existsSync(BUILT_BIN)) {
    t.fail('dist/lib/cli/main.js is missing: run `npm run build` first (npm test does)')
    return
  }
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({ listen: [{ host: '127.0.0.1', port: 0 }], log: { level: 'warn' } }))
  // --ignore-scripts skips prestart's build (the tests run against the build `npm test` made);
  // `start` itself still runs.
  const npm = outputOf(spawn('npm', ['start', '--ignore-scripts', '--', '--config', file], { cwd: ROOT, env: childEnv() }))
  // eslint-disable-next-line prefer-const -- set once, but after the teardown that reads it is registered
  let bin: number | undefined
  t.teardown(() => {
    if (npm.child.exitCode === null && npm.child.signalCode === null) npm.child.kill('SIGKILL')
    if (bin !== undefined && isRunning(bin)) process.kill(bin, 'SIGKILL')
  })
  const [url] = await listeningUrls(npm)
  t.match(url, /^http:\/\/127\.0\.0\.1:\d+$/, 'the proxy started under npm')
  bin = binUnder(npm.child.pid ?? 0)
  t.type(bin, 'number', 'the node process running the bin is found under npm')
  if (bin === undefined) return

  npm.child.kill('SIGTERM')
  const stopped = bin
  await eventually(() => !isRunning(stopped), 15_000).catch(() => {})
  t.notOk(isRunning(stopped), 'the bin exited after npm was sent SIGTERM')
  t.equal(await npm.exited, 0, 'npm exits with the bin\'s own status')
})

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'
import { childEnv, TS_LOADER } from './child-node'
import { within } from './within'

const ROOT = join(__dirname, '..', '..')
// The bin runs from its TypeScript source through the loader tap itself uses, so the tests work
// on a fresh clone after `npm ci`, before `npm run build`.

/** A spawned `forward-proxy` process with its output collected so far. */
export interface BinProcess {
  readonly child: ChildProcessWithoutNullStreams
  stdout (): string
  stderr (): string
  /** Resolves with the exit code once the process has exited. */
  readonly exited: Promise<number | null>
}

/**
 * Spawns `lib/cli/main.ts` with `args`; the environment is the test's minus FORWARD_PROXY_CONFIG
 * unless `env` sets it. Killed with SIGKILL at teardown if still running.
 */
export function runBin (t: Test, args: string[], env: Record<string, string> = {}, nodeArgs: string[] = []): BinProcess {
  return tracked(t, spawn(process.execPath, [...nodeArgs, '--import', TS_LOADER, join(ROOT, 'lib/cli/main.ts'), ...args], { cwd: ROOT, env: childEnv({ FORWARD_PROXY_CONFIG: undefined, ...env }) }))
}

/** The built bin, `dist/lib/cli/main.js` (what `npm start` and the package run). */
export const BUILT_BIN = join(ROOT, 'dist', 'lib', 'cli', 'main.js')

/** Newest modification time of the TypeScript files under `directory`. */
function newestSource (directory: string): number {
  let newest = 0
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name)
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path))
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs)
  }
  return newest
}

/** True when the built bin is at least as new as every TypeScript file of `lib/` and `examples/` (the build's sources). */
export function builtFromCurrentSources (): boolean {
  return statSync(BUILT_BIN).mtimeMs >= Math.max(newestSource(join(ROOT, 'lib')), newestSource(join(ROOT, 'examples')))
}

/** Like {@link runBin}, for the built bin: `npm run build` (or `npm test`'s pretest) makes it. */
export function runBuiltBin (t: Test, args: string[], env: Record<string, string> = {}): BinProcess {
  return tracked(t, spawn(process.execPath, [BUILT_BIN, ...args], { cwd: ROOT, env: childEnv({ FORWARD_PROXY_CONFIG: undefined, ...env }) }))
}

/** Kills a bin process with SIGKILL at teardown if still running; its output as {@link outputOf}. */
function tracked (t: Test, child: ChildProcessWithoutNullStreams): BinProcess {
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  return outputOf(child)
}

/** A spawned process with its output collected from now on, and its exit. */
export function outputOf (child: ChildProcessWithoutNullStreams): BinProcess {
  let out = ''
  let err = ''
  child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { err += chunk.toString() })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  return { child, stdout: () => out, stderr: () => err, exited }
}

/**
 * Waits for the start-up summary (its last line is the health check line) and returns the
 * listening URLs it printed. Rejects with the output if the process exits first.
 */
export function listeningUrls (bin: BinProcess): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      const text = bin.stdout()
      if (!text.includes('health check:')) return
      bin.child.stdout.removeListener('data', check)
      resolve([...text.matchAll(/listening on (\S+)/g)].map((m) => m[1] ?? ''))
    }
    bin.child.stdout.on('data', check)
    bin.exited.then((code) => reject(new Error(`exited ${String(code)} before listening:\n${bin.stdout()}\n${bin.stderr()}`)), reject)
    check()
  })
}

/** Resolves with the lines matching `pattern` once the process has printed `count` of them (stdout); fails after 15 s. */
export function printed (bin: BinProcess, pattern: RegExp, count = 1): Promise<string[]> {
  const matching = (): string[] => bin.stdout().split('\n').filter((line) => pattern.test(line))
  return within(new Promise((resolve) => {
    const check = (): void => {
      if (matching().length < count) return
      bin.child.stdout.removeListener('data', check)
      resolve(matching())
    }
    bin.child.stdout.on('data', check)
    check()
  }), `${count} line(s) matching ${String(pattern)}`, 15_000)
}

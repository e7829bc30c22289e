import { spawn } from 'node:child_process'
import { join } from 'node:path'
import type { Test } from 'tap'
import { childEnv, TS_LOADER } from './child-node'

const ROOT = join(__dirname, '..', '..')

/** A running example: its port, its output so far, and a wait for a line to appear in it. */
export interface RunningExample {
  port: number
  output: () => string
  /** Resolves once the output matches; the child's pipe may deliver a line after the response it belongs to. */
  outputMatching: (pattern: RegExp) => Promise<void>
}

/**
 * Runs `examples/<file>` from its TypeScript source with `env`, as its first lines say; resolves
 * once Fastify logged where it listens. Stopped with SIGTERM at teardown.
 */
export async function runExample (t: Test, file: string, env: Record<string, string>): Promise<RunningExample> {
  const child = spawn(process.execPath, ['--import', TS_LOADER, join(ROOT, 'examples', file)], { cwd: ROOT, env: childEnv(env) })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  t.teardown(() => new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once('exit', () => resolve())
    child.kill('SIGTERM')
  }))
  const port = await new Promise<number>((resolve, reject) => {
    const onData = (): void => {
      const listening = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(output)
      if (listening === null) return
      child.stdout.removeListener('data', onData)
      resolve(Number(listening[1]))
    }
    child.stdout.on('data', onData)
    child.once('exit', (code) => reject(new Error(`the example exited (${String(code)}) before listening:\n${output}`)))
  })
  const outputMatching = async (pattern: RegExp): Promise<void> => await new Promise((resolve) => {
    const onData = (): void => {
      if (!pattern.test(output)) return
      child.stdout.removeListener('data', onData)
      child.stderr.removeListener('data', onData)
      resolve()
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    onData()
  })
  return { port, output: () => output, outputMatching }
}

import { fork, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import type { Test } from 'tap'
import type { InterceptionPki } from './interception-pki'
import { childEnv, TS_LOADER } from './child-node'

// The child runs from TypeScript through the loader tap itself uses, as the CLI tests do.

/** How much the proxy process's memory grew since {@link MemoryProbedProxy.baseline}, in bytes. */
export interface MemoryGrowth {
  /** Buffers still referenced (`process.memoryUsage().arrayBuffers` after full GCs): where a body would be held. */
  arrayBuffers: number
  /** V8 heap still in use (after full GCs). */
  heapUsed: number
  /**
   * Growth of the peak resident set size (the kernel's high-water mark), garbage included:
   * an upper bound on what the transfer cost at its worst moment.
   */
  maxRss: number
  /** The peak resident set size when the baseline was taken (the TypeScript loader is most of it). */
  baselineMaxRss: number
}

/** Messages to the child. */
export type ChildRequest =
  | { type: 'start', leafCert: string, leafKey: string, destinationCa: string }
  | { type: 'baseline' }
  | { type: 'measure' }

/** Messages from the child. */
export type ChildReply =
  | { type: 'started', port: number }
  | { type: 'baseline-taken' }
  | { type: 'growth', growth: MemoryGrowth }
  | { type: 'failed', message: string }

/** An intercepting proxy in a child process whose memory can be measured. */
export interface MemoryProbedProxy {
  port: number
  /** `http://127.0.0.1:<port>` */
  url: string
  /** Records the memory in use now (after full GCs) and the peak RSS so far. */
  baseline (): Promise<void>
  /** The growth since {@link MemoryProbedProxy.baseline}. */
  measure (): Promise<MemoryGrowth>
}

/**
 * Forks a process running only forwardProxy with tlsInterception (every tunnel intercepted with
 * the test leaf, destinations trusted through the test destination CA), on 127.0.0.1:0.
 * Killed at teardown.
 */
export async function startMemoryProbedProxy (t: Test, pki: InterceptionPki): Promise<MemoryProbedProxy> {
  const child = fork(join(__dirname, 'memory-probed-proxy-child.ts'), [], {
    execArgv: ['--import', TS_LOADER, '--expose-gc'],
    env: childEnv(),
    stdio: ['ignore', 'inherit', 'inherit', 'ipc']
  })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  const ask = askChild(child)
  const started = await ask({
    type: 'start',
    leafCert: pki.interceptionLeaf.cert.toString(),
    leafKey: pki.interceptionLeaf.key.toString(),
    destinationCa: pki.destinationCa.cert.toString()
  })
  if (started.type !== 'started') throw new Error(`the proxy child did not start: ${JSON.stringify(started)}`)
  return {
    port: started.port,
    url: `http://127.0.0.1:${started.port}`,
    async baseline () {
      const answer = await ask({ type: 'baseline' })
      if (answer.type !== 'baseline-taken') throw new Error(`the proxy child answered ${JSON.stringify(answer)}`)
    },
    async measure () {
      const answer = await ask({ type: 'measure' })
      if (answer.type !== 'growth') throw new Error(`the proxy child answered ${JSON.stringify(answer)}`)
      return answer.growth
    }
  }
}

/** Sends one request to the child and resolves with its reply (requests are never overlapped). */
function askChild (child: ChildProcess): (request: ChildRequest) => Promise<ChildReply> {
  return (request) => new Promise((resolve, reject) => {
    const onExit = (code: number | null): void => reject(new Error(`the proxy child exited (${String(code)})`))
    child.once('exit', onExit)
    child.once('message', (reply: ChildReply) => {
      child.removeListener('exit', onExit)
      resolve(reply)
    })
    child.send(request)
  })
}

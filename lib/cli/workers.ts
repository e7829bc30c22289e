// Runs the bundled server in several worker processes sharing its listeners.

import cluster, { type Worker } from 'node:cluster'
import { relayMetricsCollection } from './cluster-metrics'
import type { ProxyServerConfig } from './config'

/** What a worker tells the first process once its listeners are bound. */
interface ReadyMessage {
  readonly type: 'forward-proxy:ready'
  /** The start-up summary the worker would have printed itself. */
  readonly summary: string
}

const SHUTDOWN = { type: 'forward-proxy:shutdown' } as const
const STARTED_CONFIGURATION_ASKED = { type: 'forward-proxy:started-configuration?' } as const

/** The first process's answer: the configuration the server started with. */
interface StartedConfigurationMessage {
  readonly type: 'forward-proxy:started-configuration'
  readonly config: ProxyServerConfig
}

// How long a failed replacement waits before each next try; the last repeats.
const REPLACEMENT_RETRY_MS = [1_000, 2_000, 5_000, 10_000, 30_000] as const

/** True in a process forked by {@link runWorkers}. */
export function isWorker (): boolean {
  return cluster.isWorker
}

/**
 * In a worker: reports the start-up summary to the first process (which prints it once for all
 * workers) and calls `shutdown` when the first process asks every worker to close.
 */
export function reportWorkerReady (summary: string, shutdown: () => void): void {
  process.on('message', (message: unknown) => {
    if (typeof message === 'object' && message !== null && (message as { type?: unknown }).type === SHUTDOWN.type) shutdown()
  })
  const ready: ReadyMessage = { type: 'forward-proxy:ready', summary }
  process.send?.(ready)
}

/**
 * In a worker: the configuration the first process started with, asked of it. Settings that
 * need a restart take their values from it, so that a worker started later (one replacing a
 * worker that died) serves what the others serve, not what the file says now.
 */
export async function startedConfiguration (): Promise<ProxyServerConfig> {
  return await new Promise((resolve) => {
    const onMessage = (message: unknown): void => {
      if ((message as Partial<StartedConfigurationMessage> | null)?.type !== 'forward-proxy:started-configuration') return
      process.removeListener('message', onMessage)
      resolve((message as StartedConfigurationMessage).config)
    }
    process.on('message', onMessage)
    process.send?.(STARTED_CONFIGURATION_ASKED)
  })
}

/**
 * The first process of a `workers` > 1 server: forks `count` workers running this same program,
 * which share the listeners through Node's cluster, and tells each the configuration `started`
 * (see {@link startedConfiguration}). The first worker starts alone (it creates
 * the development CA when one is needed, so the others find it), then the rest; once all are
 * listening the first summary is printed with a `workers:` line. A worker that fails to start
 * stops everything with exit code 1; one that dies later is replaced, and a replacement that
 * cannot start (the file does not load now) is tried again after 1, 2, 5, 10, then every 30 s;
 * when no worker is left the process exits 1. SIGTERM or SIGINT asks
 * every worker to close gracefully; the process exits 0 when all exited 0, else 1. SIGHUP is
 * passed to every worker, which reloads the configuration file. A scrape of the metrics
 * listener (which the workers share) is answered with the sum over every worker.
 */
export async function runWorkers (count: number, started: ProxyServerConfig): Promise<void> {
  let closing = false
  let failed = false
  let replacementFailures = 0
  const live = new Set<Worker>()
  const exitWhenAllGone = (): void => {
    if (live.size === 0) process.exit(failed ? 1 : 0)
  }
  const shutdown = (): void => {
    process.removeListener('SIGINT', shutdown)
    process.removeListener('SIGTERM', shutdown)
    closing = true
    for (const worker of live) worker.send(SHUTDOWN)
    exitWhenAllGone()
  }
  process.on('SIGINT', shutdown)
  process.on('SIGTERM', shutdown)
  // A scrape of the shared metrics listener sums every worker's metrics (cluster-metrics.ts).
  relayMetricsCollection()
  // Each worker reloads the file itself (and watches it); the signal only reaches this process.
  process.on('SIGHUP', () => {
    for (const worker of live) worker.process.kill('SIGHUP')
  })

  const start = (): Promise<string> => new Promise((resolve, reject) => {
    const worker: Worker = cluster.fork()
    live.add(worker)
    let ready = false
    worker.on('message', (message: ReadyMessage | typeof STARTED_CONFIGURATION_ASKED) => {
      if (message?.type === STARTED_CONFIGURATION_ASKED.type) {
        const answer: StartedConfigurationMessage = { type: 'forward-proxy:started-configuration', config: started }
        worker.send(answer)
        return
      }
      if (message?.type !== 'forward-proxy:ready') return
      ready = true
      // Asked to close while it was starting: it closes now that it can.
      if (closing) worker.send(SHUTDOWN)
      resolve(message.summary)
    })
    worker.once('exit', (code, signal) => {
      live.delete(worker)
      if (code !== 0 && (closing || !ready)) failed = true
      if (!ready) {
        reject(new Error(`a worker exited (${signal ?? String(code)}) before it listened`))
        if (closing) exitWhenAllGone()
      } else if (closing) {
        exitWhenAllGone()
      } else {
        process.stderr.write(`forward-proxy: worker ${worker.process.pid ?? '?'} exited (${signal ?? String(code)}); starting another\n`)
        replace()
      }
    })
  })
  // A replacement that fails (it printed why) is tried again later; with no worker left there
  // is no proxy, and exit code 1 tells a supervisor so.
  const replace = (): void => {
    start().then(() => { replacementFailures = 0 }, () => {
      if (closing) return
      if (live.size === 0) {
        process.stderr.write('forward-proxy: no worker is left and none can start; stopping\n')
        process.exit(1)
      }
      const wait = REPLACEMENT_RETRY_MS[Math.min(replacementFailures++, REPLACEMENT_RETRY_MS.length - 1)] as number
      process.stderr.write(`forward-proxy: a replacement worker could not start; trying again in ${wait / 1000} s (${live.size} of ${count} workers serving)\n`)
      setTimeout(() => { if (!closing) replace() }, wait).unref()
    })
  }

  let summary: string
  try {
    summary = await start()
    await Promise.all(Array.from({ length: count - 1 }, start))
  } catch {
    // The worker printed why on its stderr (inherited); the others are stopped with it.
    closing = true
    for (const worker of live) worker.process.kill('SIGKILL')
    process.exit(1)
  }
  const lines = summary.split('\n')
  lines.splice(1, 0, `  workers: ${count} processes (Node cluster), first process ${process.pid}`)
  process.stdout.write(`${lines.join('\n')}\n`)
}

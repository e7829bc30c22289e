// Gives memory back to the system once the proxy is quiet (`releaseIdleMemory`, off by default).
// V8 keeps the heap pages a burst of traffic (or the start-up) made it grow into, and on its own
// does not shrink them while the process sits idle for the next half minute at least: a proxy
// that served a burst held 40 to 55 MiB of them, against 15 to 20 after one collection that
// reduces the heap. For an egress proxy of a sandbox, idle most of its life, that is most of its
// footprint. The collection costs CPU later, which is why it is off by default: it drops the
// code V8 optimized for the traffic (the next bursts spent about 1.3 times the CPU per request
// while V8 optimized it again), and after the start-up's release the first seconds of load
// cost 1.3 to 1.8 times the CPU per request (docs/benchmarks.md, Memory).

import { performance, type EventLoopUtilization } from 'node:perf_hooks'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/** How often the event loop's utilization is read (ms). */
const CHECK_INTERVAL = 2000
/** The share of a check interval the event loop may have been busy for the process to count as quiet. */
const QUIET_UTILIZATION = 0.01
/**
 * How much the RSS must have grown since the last release before another one is worth its pause
 * (bytes): a trickle of requests that grows nothing causes no collection.
 */
const GROWTH_WORTH_RELEASING = 8 * 1024 * 1024
/** The quiet time after traffic before a release with `releaseIdleMemory: true` (ms). */
export const DEFAULT_QUIET_BEFORE_RELEASE = 30_000

/** What the process logs a release with. */
export interface IdleMemoryLog {
  debug: (fields: object, message: string) => void
  warn: (fields: object, message: string) => void
}

type CollectGarbage = (options: { type: 'major', flavor: 'last-resort' }) => void

/**
 * True when this Node's V8 can run the collection that gives memory back: its `gc` function takes
 * `flavor: 'last-resort'` from V8 12 (Node 22) on. Node 20's ignores the option and runs an
 * ordinary full collection, which shrinks nothing (measured: the RSS grew by 2 MiB).
 */
export function canReleaseIdleMemory (): boolean {
  return Number(process.versions.v8.split('.')[0]) >= 12
}

/**
 * Runs one V8 collection that shrinks the heap and returns the freed pages at once, for what the
 * start-up left (call it once the server listens, before any request). Then watches the event loop every {@link CHECK_INTERVAL} ms, and runs it again once the
 * process has been quiet (its event loop busy less than {@link QUIET_UTILIZATION} of each
 * interval) for `quietBeforeRelease` ms in a row, with its RSS grown by
 * {@link GROWTH_WORTH_RELEASING} or more since the last release.
 *
 * A request arriving during the collection waits for it (20 to 100 ms on a 2-core machine); a
 * busy process is never paused. Returns a function that stops watching. Does nothing where
 * {@link canReleaseIdleMemory} is false.
 */
export function releaseMemoryWhenIdle (log: IdleMemoryLog, quietBeforeRelease = DEFAULT_QUIET_BEFORE_RELEASE): () => void {
  if (!canReleaseIdleMemory()) return () => {}
  const collect = garbageCollector()
  const quietChecksNeeded = Math.max(1, Math.ceil(quietBeforeRelease / CHECK_INTERVAL))
  let releasedAt = 0
  let quietChecks = 0
  let previous: EventLoopUtilization
  const release = (): boolean => {
    const before = process.memoryUsage.rss()
    const started = performance.now()
    try {
      collect({ type: 'major', flavor: 'last-resort' })
    } catch (error) {
      log.warn({ err: error }, 'cannot give idle memory back: stopped trying')
      return false
    }
    releasedAt = process.memoryUsage.rss()
    // The collection must not count as traffic at the next check.
    previous = performance.eventLoopUtilization()
    log.debug({ idleMemory: { rssBefore: before, rssAfter: releasedAt, milliseconds: Math.round(performance.now() - started) } }, 'gave idle memory back')
    return true
  }
  if (!release()) return () => {}
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization()
    const busy = performance.eventLoopUtilization(now, previous).utilization
    previous = now
    if (busy >= QUIET_UTILIZATION) {
      quietChecks = 0
      return
    }
    quietChecks++
    if (quietChecks < quietChecksNeeded || process.memoryUsage.rss() < releasedAt + GROWTH_WORTH_RELEASING) return
    if (!release()) clearInterval(timer)
  }, CHECK_INTERVAL)
  timer.unref()
  return () => clearInterval(timer)
}

/**
 * V8's `gc` function: the global one when Node was started with `--expose-gc`; otherwise taken
 * from a fresh context while the flag is on and the flag turned off again at once, so that
 * neither this process's global scope nor any later context has it.
 */
function garbageCollector (): CollectGarbage {
  const exposed: unknown = Reflect.get(globalThis, 'gc')
  if (typeof exposed === 'function') return exposed as CollectGarbage
  setFlagsFromString('--expose-gc')
  try {
    return runInNewContext('gc') as CollectGarbage
  } finally {
    setFlagsFromString('--no-expose-gc')
  }
}

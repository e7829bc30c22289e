// Gives V8's unused heap back to the system (`releaseIdleMemory`): by default once, as soon as the
// bin listens, for what the start-up left behind; optionally again once the proxy is quiet after
// traffic. V8 keeps the heap pages the start-up and bursts of traffic made it grow into, and on
// its own does not shrink them while the process sits idle for the next half minute at least: a
// proxy that served a burst held 40 to 55 MiB of them, against 15 to 20 after one collection that
// reduces the heap. For an egress proxy of a sandbox, idle most of its life, that is most of its
// footprint. The releases after traffic are off by default because they cost CPU later: they drop
// the code V8 optimized for the traffic, and the next bursts spend about 1.14 times the CPU per
// request while V8 optimizes it again (docs/benchmarks.md, Memory).

import { executionAsyncResource } from 'node:async_hooks'
import { performance } from 'node:perf_hooks'
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
const DEFAULT_QUIET_BEFORE_RELEASE = 30_000

/**
 * `releaseIdleMemory`: `false` (never), `"start"` (once the bin listens: the default), `true`
 * (then also after {@link DEFAULT_QUIET_BEFORE_RELEASE} ms quiet following traffic) or that
 * quiet time in milliseconds.
 */
export type ReleaseIdleMemory = boolean | 'start' | number

/** When this process gives memory back, read once from `releaseIdleMemory`. */
export interface IdleMemoryPlan {
  /** Once the server listens, before any request. */
  atStart: boolean
  /** After this many ms of quiet following traffic; undefined: never after traffic. */
  quietBeforeRelease: number | undefined
  /** Why nothing is given back, when nothing is. */
  keptBecause?: string
}

/** What `releaseIdleMemory` (absent: `"start"`) means on this Node. */
export function idleMemoryPlan (releaseIdleMemory: ReleaseIdleMemory = 'start'): IdleMemoryPlan {
  if (releaseIdleMemory === false) return { atStart: false, quietBeforeRelease: undefined, keptBecause: 'releaseIdleMemory is false' }
  if (!canReleaseIdleMemory()) return { atStart: false, quietBeforeRelease: undefined, keptBecause: 'giving it back needs Node 22 or later' }
  if (releaseIdleMemory === 'start') return { atStart: true, quietBeforeRelease: undefined }
  return { atStart: true, quietBeforeRelease: releaseIdleMemory === true ? DEFAULT_QUIET_BEFORE_RELEASE : releaseIdleMemory }
}

/**
 * One of `process.nextTick`'s queue entries, held for the life of the process. Node builds each
 * entry with an object literal, and V8's inline cache for that literal holds the entry's hidden
 * class (its map) weakly. A collection that reduces the heap (this module's; V8's memory reducer
 * can start one too) while no entry is alive frees that map; the next entry then gets a new
 * one, the cache turns megamorphic, and from then on every `nextTick` of the process goes
 * through V8's runtime (perf: about 2% of the main thread under load, for the rest of the
 * process's life). Keeping one entry alive keeps the map.
 */
let keptTickEntry: object | undefined

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
function canReleaseIdleMemory (): boolean {
  return Number(process.versions.v8.split('.')[0]) >= 12
}

/**
 * Runs one V8 collection that shrinks the heap and returns the freed pages, in the next tick (call
 * it once the server listens, before any request) when `plan.atStart`. With
 * `plan.quietBeforeRelease`, then watches the event loop every {@link CHECK_INTERVAL} ms, and runs
 * it again once the process has been quiet (its event loop busy less than
 * {@link QUIET_UTILIZATION} of each interval) for that many ms in a row, with its RSS grown by
 * {@link GROWTH_WORTH_RELEASING} or more since the last release.
 *
 * A request arriving during the collection waits for it (20 to 100 ms on a 2-core machine); a
 * busy process is never paused. Returns a function that stops it.
 */
export function releaseMemoryWhenIdle (log: IdleMemoryLog, plan: IdleMemoryPlan): () => void {
  if (!plan.atStart) return () => {}
  const collect = garbageCollector()
  let stopped = false
  let releasedAt = 0
  let quietChecks = 0
  let previous = performance.eventLoopUtilization()
  // Run from a tick, so that the tick's entry is alive during the collection and can be kept.
  const release = (): void => process.nextTick(() => {
    if (stopped) return
    keptTickEntry ??= executionAsyncResource()
    const before = process.memoryUsage.rss()
    const started = performance.now()
    try {
      collect({ type: 'major', flavor: 'last-resort' })
    } catch (error) {
      log.warn({ err: error }, 'cannot give idle memory back: stopped trying')
      stopped = true
      return
    }
    releasedAt = process.memoryUsage.rss()
    // The collection must not count as traffic at the next check.
    previous = performance.eventLoopUtilization()
    log.debug({ idleMemory: { rssBefore: before, rssAfter: releasedAt, milliseconds: Math.round(performance.now() - started) } }, 'gave idle memory back')
  })
  release()
  const { quietBeforeRelease } = plan
  if (quietBeforeRelease === undefined) return () => { stopped = true }
  const quietChecksNeeded = Math.max(1, Math.ceil(quietBeforeRelease / CHECK_INTERVAL))
  const timer = setInterval(() => {
    if (stopped) {
      clearInterval(timer)
      return
    }
    const now = performance.eventLoopUtilization()
    const busy = performance.eventLoopUtilization(now, previous).utilization
    previous = now
    if (busy >= QUIET_UTILIZATION) {
      quietChecks = 0
      return
    }
    quietChecks++
    if (quietChecks < quietChecksNeeded || process.memoryUsage.rss() < releasedAt + GROWTH_WORTH_RELEASING) return
    quietChecks = 0
    release()
  }, CHECK_INTERVAL)
  timer.unref()
  return () => {
    stopped = true
    clearInterval(timer)
  }
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

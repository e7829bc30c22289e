// The limits a `workers` server shares without Redis, in the first process: it counts every
// user's rate places, tunnel slots and authentication failures for all workers, which ask it
// over the cluster channel (see workers-limit-store.ts for the worker's side).

import cluster, { type Worker } from 'node:cluster'
import type { AuthFailureCount } from '../security/limit-store'
import type { ReturnedUnits } from '../security/rate-reserves'
import { placesToTake } from '../security/reserved-rate-counter'
import {
  type Answer, ANSWERS, type AnswersMessage, CALLS, type CallsMessage, FAILURES, type FailuresMessage, SURRENDER, type SurrenderMessage,
  SURRENDERED, type SurrenderedMessage, type TakeEntry, type TakenEntry
} from './workers-limits-protocol'

// Windows of keys that stopped counting are dropped once this many are kept.
const MAX_IDLE_WINDOWS = 10_000
// How long the first process waits for workers to give back their unused rate places.
const SURRENDER_TIMEOUT_MS = 200

/** A rate window: the places taken in it, and the workers that took some ahead of requests. */
interface RateWindow {
  readonly endsAt: number
  readonly window: string
  taken: number
  readonly holders: Set<number>
}

/** The answer to one key of a take, with the other workers holding places when it fell short. */
export interface WorkersTaken {
  readonly taken: number
  readonly msLeft: number
  readonly window: string
  readonly otherHolders: readonly number[]
}

/**
 * The counts of the first process: rate windows and failure windows that start at a key's first
 * request (or failure), and the tunnel slots each worker holds, given back when it exits.
 */
export class WorkersLimitCounts {
  readonly #rates = new Map<string, RateWindow>()
  readonly #failures = new Map<string, { endsAt: number, count: number }>()
  // Slots held per key, and by which worker, so that a worker that died gives its back.
  readonly #slots = new Map<string, Map<number, number>>()
  readonly #now: () => number
  #windows = 0

  constructor (now: () => number = Date.now) {
    this.#now = now
  }

  /**
   * Takes rate places of `key` for `needed` requests of `worker` under `limit` (and some ahead
   * while plenty are left), after taking back the places `givenBack`.
   */
  take (key: string, needed: number, limit: number, windowMs: number, worker: number, givenBack: ReturnedUnits | null): WorkersTaken {
    const now = this.#now()
    const window = currentWindow(this.#rates, key, now, () => {
      return { endsAt: now + windowMs, window: String(++this.#windows), taken: 0, holders: new Set<number>() }
    })
    // Places of a window that ended went with it; giveBack takes back only the current window's.
    if (givenBack !== null) this.giveBack(key, givenBack.window, givenBack.units, worker)
    const taken = placesToTake(limit - window.taken, needed)
    window.taken += taken
    if (taken > needed) window.holders.add(worker)
    const otherHolders = taken < needed ? [...window.holders].filter((holder) => holder !== worker) : []
    return { taken, msLeft: Math.max(1, window.endsAt - now), window: window.window, otherHolders }
  }

  /** Takes back `units` unused places of `key`'s `window` from `worker` (none if it ended). */
  giveBack (key: string, window: string, units: number, worker: number): void {
    const current = this.#rates.get(key)
    if (current === undefined || current.window !== window) return
    current.taken -= units
    current.holders.delete(worker)
  }

  /** Counts one failed authentication of `client`. */
  recordAuthFailure (client: string, windowMs: number): AuthFailureCount {
    const now = this.#now()
    const window = currentWindow(this.#failures, client, now, () => ({ endsAt: now + windowMs, count: 0 }))
    window.count += 1
    return { failures: window.count, msLeft: Math.max(1, window.endsAt - now) }
  }

  /** Takes one of `limit` slots of `key` for `worker`; false when all are taken. */
  acquireSlot (key: string, limit: number, worker: number): boolean {
    let holders = this.#slots.get(key)
    let held = 0
    for (const count of holders?.values() ?? []) held += count
    if (held >= limit) return false
    if (holders === undefined) {
      holders = new Map()
      this.#slots.set(key, holders)
    }
    holders.set(worker, (holders.get(worker) ?? 0) + 1)
    return true
  }

  /** Gives back one slot of `key` held by `worker`. */
  releaseSlot (key: string, worker: number): void {
    const holders = this.#slots.get(key)
    const count = holders?.get(worker)
    if (holders === undefined || count === undefined) return
    if (count > 1) holders.set(worker, count - 1)
    else holders.delete(worker)
    if (holders.size === 0) this.#slots.delete(key)
  }

  /**
   * Gives back every slot `worker` held (it exited). Its unused rate places stay taken until
   * their windows end: how many it had used died with it.
   */
  releaseWorker (worker: number): void {
    for (const [key, holders] of this.#slots) {
      holders.delete(worker)
      if (holders.size === 0) this.#slots.delete(key)
    }
    for (const window of this.#rates.values()) window.holders.delete(worker)
  }
}

/**
 * The window of `key` still open at `now`, or a new one from `open` (first dropping the ended
 * windows of keys that stopped counting, once MAX_IDLE_WINDOWS are kept).
 */
function currentWindow<W extends { readonly endsAt: number }> (windows: Map<string, W>, key: string, now: number, open: () => W): W {
  const window = windows.get(key)
  if (window !== undefined && now < window.endsAt) return window
  if (window === undefined && windows.size >= MAX_IDLE_WINDOWS) {
    for (const [name, old] of windows) if (now >= old.endsAt) windows.delete(name)
  }
  const opened = open()
  windows.set(key, opened)
  return opened
}

/**
 * In the first process of a `workers` server: answers the workers' limit calls from one
 * {@link WorkersLimitCounts}, asks workers for the rate places they hold unused when another
 * runs out, tells every worker of each failed authentication, and gives back the slots of a
 * worker that exits.
 */
export function serveWorkersLimits (counts: WorkersLimitCounts = new WorkersLimitCounts()): void {
  const surrenders = new Map<number, (units: number) => void>()
  let nextSurrender = 1

  /** Asks each of `holders` for its unused places of `key`'s `window`; resolves when all answered, or after the timeout. */
  const askHolders = (key: string, window: string, holders: readonly number[]): Promise<void> => {
    const asked = holders.map((holder) => new Promise<void>((resolve) => {
      const worker = cluster.workers?.[holder]
      if (worker?.isConnected() !== true) {
        resolve()
        return
      }
      const id = nextSurrender++
      const timer = setTimeout(() => {
        surrenders.delete(id)
        resolve()
      }, SURRENDER_TIMEOUT_MS)
      surrenders.set(id, (units) => {
        clearTimeout(timer)
        surrenders.delete(id)
        counts.giveBack(key, window, units, holder)
        resolve()
      })
      worker.send({ type: SURRENDER, id, key, window } satisfies SurrenderMessage)
    }))
    return Promise.all(asked).then(() => {})
  }

  /** A take call: answered at once, or once the holders of a window that fell short were asked. */
  const take = (worker: Worker, entries: readonly TakeEntry[]): TakenEntry[] | Promise<TakenEntry[]> => {
    const results = entries.map(([key, needed, limit, windowMs, givenBack, givenBackWindow]) => {
      return counts.take(key, needed, limit, windowMs, worker.id, givenBack > 0 ? { units: givenBack, window: givenBackWindow } : null)
    })
    const answer = (): TakenEntry[] => results.map(({ taken, msLeft, window }) => [taken, msLeft, window])
    if (results.every((result) => result.otherHolders.length === 0)) return answer()
    return Promise.all(results.map(async (result, i) => {
      if (result.otherHolders.length === 0) return
      await askHolders((entries[i] as TakeEntry)[0], result.window, result.otherHolders)
      const [key, needed, limit, windowMs] = entries[i] as TakeEntry
      const more = counts.take(key, needed - result.taken, limit, windowMs, worker.id, null)
      results[i] = { ...more, taken: result.taken + more.taken }
    })).then(answer)
  }

  cluster.on('message', (worker: Worker, message: CallsMessage | SurrenderedMessage) => {
    if (message?.type === SURRENDERED) {
      surrenders.get(message.id)?.(message.units)
      return
    }
    if (message?.type !== CALLS) return
    const answers: Array<readonly [number, Answer]> = []
    for (const call of message.calls) {
      switch (call[0]) {
        case 'take': {
          const id = call[1]
          const taken = take(worker, call[2])
          if (Array.isArray(taken)) answers.push([id, taken])
          else taken.then((later) => answer(worker, [[id, later]]), () => {})
          break
        }
        case 'giveBack': counts.giveBack(call[1], call[2], call[3], worker.id); break
        case 'slot': answers.push([call[1], counts.acquireSlot(call[2], call[3], worker.id)]); break
        case 'release': counts.releaseSlot(call[1], worker.id); break
        case 'failure': {
          const count = counts.recordAuthFailure(call[2], call[3])
          answers.push([call[1], count])
          broadcast({ type: FAILURES, client: call[2], count })
          break
        }
      }
    }
    if (answers.length > 0) answer(worker, answers)
  })
  cluster.on('exit', (worker) => counts.releaseWorker(worker.id))
}

function answer (worker: Worker, answers: ReadonlyArray<readonly [number, Answer]>): void {
  if (worker.isConnected()) worker.send({ type: ANSWERS, answers } satisfies AnswersMessage)
}

function broadcast (message: FailuresMessage): void {
  for (const worker of Object.values(cluster.workers ?? {})) {
    if (worker?.isConnected() === true) worker.send(message)
  }
}

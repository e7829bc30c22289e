// The limits a `workers` server shares without Redis: the first process counts every user's
// rate, tunnel slots and authentication failures for all workers, which ask it over the cluster
// channel, one message per turn of their event loop.

import cluster, { type Worker } from 'node:cluster'
import type { AuthFailureCount, LimitStore } from '../security/limit-store'

// Message types on the cluster channel (other `forward-proxy:` messages share it).
const CALLS = 'forward-proxy:limits'
const ANSWERS = 'forward-proxy:limits-answers'
const FAILURES = 'forward-proxy:auth-failures'

/**
 * One call of a worker: `['rate', id, key, limit, windowMs]`, `['slot', id, key, limit]`,
 * `['release', key]` (no answer) or `['failure', id, client, windowMs]`.
 */
type Call =
  | readonly ['rate', number, string, number, number]
  | readonly ['slot', number, string, number]
  | readonly ['release', string]
  | readonly ['failure', number, string, number]

interface CallsMessage { readonly type: typeof CALLS, readonly calls: readonly Call[] }
interface AnswersMessage { readonly type: typeof ANSWERS, readonly answers: ReadonlyArray<readonly [number, number | boolean | AuthFailureCount]> }
interface FailuresMessage { readonly type: typeof FAILURES, readonly client: string, readonly count: AuthFailureCount }

// How long a worker waits for the first process before counting in its own process.
const ANSWER_TIMEOUT_MS = 1_000
// Windows of keys that stopped counting are dropped once this many are kept.
const MAX_IDLE_WINDOWS = 10_000

/**
 * The counts of the first process: rate windows and failure windows that start at a key's first
 * request (or failure), and the tunnel slots each worker holds, given back when it exits.
 */
export class WorkersLimitCounts {
  readonly #rates = new Map<string, { endsAt: number, count: number }>()
  readonly #failures = new Map<string, { endsAt: number, count: number }>()
  // Slots held per key, and by which worker, so that a worker that died gives its back.
  readonly #slots = new Map<string, Map<number, number>>()
  readonly #now: () => number

  constructor (now: () => number = Date.now) {
    this.#now = now
  }

  /** Counts one request of `key`: 0 within `limit`, else the milliseconds until its window ends. */
  countRequest (key: string, limit: number, windowMs: number): number {
    const window = this.#count(this.#rates, key, windowMs)
    return window.count <= limit ? 0 : Math.max(1, window.endsAt - this.#now())
  }

  /** Counts one failed authentication of `client`. */
  recordAuthFailure (client: string, windowMs: number): AuthFailureCount {
    const window = this.#count(this.#failures, client, windowMs)
    return { failures: window.count, msLeft: Math.max(1, window.endsAt - this.#now()) }
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

  /** Gives back every slot `worker` held (it exited). */
  releaseWorker (worker: number): void {
    for (const [key, holders] of this.#slots) {
      holders.delete(worker)
      if (holders.size === 0) this.#slots.delete(key)
    }
  }

  #count (windows: Map<string, { endsAt: number, count: number }>, key: string, windowMs: number): { endsAt: number, count: number } {
    const now = this.#now()
    let window = windows.get(key)
    if (window === undefined || now >= window.endsAt) {
      if (window === undefined && windows.size >= MAX_IDLE_WINDOWS) {
        for (const [name, old] of windows) if (now >= old.endsAt) windows.delete(name)
      }
      window = { endsAt: now + windowMs, count: 0 }
      windows.set(key, window)
    }
    window.count += 1
    return window
  }
}

/**
 * In the first process of a `workers` server: answers the workers' limit calls from one
 * {@link WorkersLimitCounts}, tells every worker of each failed authentication, and gives back
 * the slots of a worker that exits.
 */
export function serveWorkersLimits (counts: WorkersLimitCounts = new WorkersLimitCounts()): void {
  cluster.on('message', (worker: Worker, message: CallsMessage) => {
    if (message?.type !== CALLS) return
    const answers: Array<readonly [number, number | boolean | AuthFailureCount]> = []
    for (const call of message.calls) {
      switch (call[0]) {
        case 'rate': answers.push([call[1], counts.countRequest(call[2], call[3], call[4])]); break
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
    if (answers.length > 0 && worker.isConnected()) worker.send({ type: ANSWERS, answers } satisfies AnswersMessage)
  })
  cluster.on('exit', (worker) => counts.releaseWorker(worker.id))
}

function broadcast (message: FailuresMessage): void {
  for (const worker of Object.values(cluster.workers ?? {})) {
    if (worker?.isConnected() === true) worker.send(message)
  }
}

interface PendingCall {
  readonly resolve: (answer: number | boolean | AuthFailureCount) => void
  readonly reject: (error: Error) => void
}

/**
 * In a worker: the {@link LimitStore} whose counts the first process keeps
 * ({@link serveWorkersLimits}). The calls of one turn of the event loop leave in one message,
 * under one timer.
 */
export function workersLimitStore (): LimitStore {
  let nextId = 1
  let queued: Call[] = []
  const pending = new Map<number, PendingCall>()
  let failuresListener: ((client: string, count: AuthFailureCount) => void) | null = null
  let availabilityListener: ((available: boolean, reason?: Error) => void) | null = null

  const settle = (id: number, answer: number | boolean | AuthFailureCount | Error): void => {
    const call = pending.get(id)
    if (call === undefined) return
    pending.delete(id)
    if (answer instanceof Error) call.reject(answer)
    else call.resolve(answer)
  }
  const settleAll = (calls: readonly Call[], error: Error): void => {
    for (const call of calls) if (call[0] !== 'release') settle(call[1], error)
  }
  const flush = (): void => {
    const calls = queued
    queued = []
    if (process.send === undefined || !process.connected) {
      settleAll(calls, new Error('the first process cannot be reached'))
      return
    }
    process.send({ type: CALLS, calls } satisfies CallsMessage)
    // Answered calls are settled already: only the unanswered ones are failed.
    setTimeout(() => settleAll(calls, new Error(`the first process did not answer within ${ANSWER_TIMEOUT_MS} ms`)), ANSWER_TIMEOUT_MS).unref()
  }
  const enqueue = (call: Call): void => {
    if (queued.length === 0) setImmediate(flush)
    queued.push(call)
  }
  const ask = <T extends number | boolean | AuthFailureCount>(build: (id: number) => Call): Promise<T> => new Promise((resolve, reject) => {
    const id = nextId++
    pending.set(id, { resolve: resolve as PendingCall['resolve'], reject })
    enqueue(build(id))
  })

  const onMessage = (message: AnswersMessage | FailuresMessage): void => {
    if (message?.type === ANSWERS) {
      for (const [id, answer] of message.answers) settle(id, answer)
    } else if (message?.type === FAILURES) {
      failuresListener?.(message.client, message.count)
    }
  }
  const onDisconnect = (): void => availabilityListener?.(false, new Error('the channel to the first process closed'))
  process.on('message', onMessage)
  process.once('disconnect', onDisconnect)

  return {
    label: 'the first process of the workers',
    countRequest: (key, limit, windowMs) => ask<number>((id) => ['rate', id, key, limit, windowMs]),
    async acquireSlot (key, limit) {
      const taken = await ask<boolean>((id) => ['slot', id, key, limit])
      if (!taken) return null
      let released = false
      return () => {
        if (released) return
        released = true
        enqueue(['release', key])
      }
    },
    recordAuthFailure: (client, windowMs) => ask<AuthFailureCount>((id) => ['failure', id, client, windowMs]),
    onAuthFailures (listener) { failuresListener = listener },
    onAvailability (listener) { availabilityListener = listener },
    async close () {
      process.removeListener('message', onMessage)
      process.removeListener('disconnect', onDisconnect)
      // The first process gives back this worker's slots when it exits.
    }
  }
}

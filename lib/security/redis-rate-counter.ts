// A user's request rate counted in Redis for every process: the requests of one event-loop turn
// in one script call, and places of a window taken ahead while plenty are left, so that most
// requests are admitted without a call, and given back to a process that runs out.

import { RateReserves } from './rate-reserves'
import { chunks, giveBackRateUnitsScript, type LuaScript, takeRateUnitsScript } from './redis-scripts'

const noop = (): void => {}

/** What the rate counter needs of its store's connection. */
export interface RateCounterLink {
  /** Runs `script` within the store's timeout; rejects when Redis cannot answer. */
  call (script: LuaScript, keyCount: number, keysThenArgs: ReadonlyArray<string | number>): Promise<unknown>
  /** Publishes on {@link RateCounterLink.channel}; rejects at once when Redis is not connected. */
  publish (message: string): Promise<unknown>
  /** The channel on which processes ask each other for the places they took ahead. */
  readonly channel: string
  /** The error of a call Redis answered with something unexpected. */
  unavailable (reason: string): Error
}

/**
 * A process's reserve of a user's window takes at most 1/RESERVE_SHARE of what is left of it,
 * and at most MOST_UNITS_AHEAD units: far from the limit most requests are counted in the
 * process; near it, where that share is less than one place, every request is counted by Redis.
 */
const RESERVE_SHARE = 16
const MOST_UNITS_AHEAD = 256

/** A request counted in the current event-loop turn, answered when its batch is. */
interface PendingCount {
  readonly key: string
  readonly limit: number
  readonly windowMs: number
  readonly resolve: (msLeft: number) => void
  readonly reject: (error: Error) => void
}

/**
 * A request for other processes' reserves of a window, by the process that ran out: settled
 * when every holder answered, or after the store's timeout.
 */
interface ReserveRequest {
  readonly holders: number
  readonly answered: Set<string>
  readonly done: Promise<void>
  readonly settle: () => void
}

/**
 * Counts requests of keys in their shared windows: {@link RedisRateCounter.count} answers 0
 * at once from places this process took ahead, else queues the request for the turn's script
 * call. Messages on the link's channel go to {@link RedisRateCounter.onMessage}.
 */
export class RedisRateCounter {
  readonly #link: RateCounterLink
  readonly #processId: string
  readonly #timeout: number
  readonly #reserves = new RateReserves()
  readonly #reserveRequests = new Map<string, ReserveRequest>()
  #pending: PendingCount[] = []

  /** `processId` names this process to the others; `timeout` bounds a wait for their places. */
  constructor (link: RateCounterLink, processId: string, timeout: number) {
    this.#link = link
    this.#processId = processId
    this.#timeout = timeout
  }

  /** Counts one request of `rateKey` (a full Redis key): see LimitStore.countRequest. */
  count (rateKey: string, limit: number, windowMs: number): number | Promise<number> {
    if (this.#reserves.use(rateKey, limit)) return 0
    return new Promise((resolve, reject) => {
      if (this.#pending.push({ key: rateKey, limit, windowMs, resolve, reject }) === 1) {
        setImmediate(() => this.#flushCounts())
      }
    })
  }

  /** Gives back every place this process took ahead and did not use (it stops). */
  giveBackAll (): Array<Promise<unknown>> {
    return this.#reserves.surrenderAll().map(([key, { window, units }]) => this.#giveBackUnits(key, window, units, ''))
  }

  #flushCounts (): void {
    // A reply that came in since these were queued may have left a reserve to count them from.
    const pending = this.#pending.filter((count) => {
      if (!this.#reserves.use(count.key, count.limit)) return true
      count.resolve(0)
      return false
    })
    this.#pending = []
    if (pending.length === 0) return
    const byKey = new Map<string, PendingCount[]>()
    for (const count of pending) {
      const same = byKey.get(count.key)
      if (same === undefined) byKey.set(count.key, [count])
      else same.push(count)
    }
    const keys = [...byKey.keys()]
    for (const part of chunks(keys)) this.#countBatch(part, byKey, true)
  }

  /**
   * One script call for the batch, one window per key: the requests of a key are admitted in
   * their order while the units taken last. When some are left over and other processes hold
   * reserves of that window, they are asked for them (once), and the leftover requests counted
   * again; what is still left over is refused.
   */
  #countBatch (keys: readonly string[], byKey: ReadonlyMap<string, readonly PendingCount[]>, mayAskOthers: boolean): void {
    const size = keys.length
    const keysThenArgs: Array<string | number> = new Array(size * 6 + 3)
    keysThenArgs[size] = this.#processId
    keysThenArgs[size + 1] = RESERVE_SHARE
    keysThenArgs[size + 2] = MOST_UNITS_AHEAD
    const limits: number[] = new Array(size)
    for (let i = 0; i < size; i++) {
      const key = keys[i] as string
      const counts = byKey.get(key) as PendingCount[]
      // Requests counted under different limits in one turn (a reload): the lowest holds for all.
      let limit = (counts[0] as PendingCount).limit
      for (const count of counts) limit = Math.min(limit, count.limit)
      limits[i] = limit
      const unusable = this.#reserves.takeUnusable(key, limit)
      const at = size + 3 + 5 * i
      keysThenArgs[i] = key
      keysThenArgs[at] = counts.length
      keysThenArgs[at + 1] = limit
      keysThenArgs[at + 2] = (counts[0] as PendingCount).windowMs
      keysThenArgs[at + 3] = unusable?.units ?? 0
      keysThenArgs[at + 4] = unusable?.window ?? ''
    }
    const sentAt = Date.now()
    this.#link.call(takeRateUnitsScript, size, keysThenArgs).then((reply) => {
      if (!isTakeReply(reply, size)) throw this.#link.unavailable('unexpected reply')
      for (let i = 0; i < size; i++) {
        const key = keys[i] as string
        const counts = byKey.get(key) as PendingCount[]
        const [taken, msLeft, window, holders] = reply.slice(4 * i, 4 * i + 4) as [number, number, string, number]
        const admitted = Math.min(taken, counts.length)
        for (let j = 0; j < admitted; j++) (counts[j] as PendingCount).resolve(0)
        if (taken > counts.length) this.#reserves.add(key, window, taken - counts.length, limits[i] as number, sentAt + msLeft)
        if (admitted === counts.length) continue
        const leftOver = counts.slice(admitted)
        if (mayAskOthers && holders > 0) {
          this.#askForReserves(key, window, holders).then(() => this.#countBatch([key], new Map([[key, leftOver]]), false), noop)
        } else {
          for (const count of leftOver) count.resolve(msLeft)
        }
      }
    }).catch((error: Error) => {
      for (const key of keys) for (const count of byKey.get(key) as PendingCount[]) count.reject(error)
    })
  }

  /**
   * Asks the `holders` other processes with a reserve of `key`'s `window` to give back what
   * they have not used; resolves when all answered, or after the timeout (a holder that died
   * never answers: its units stay taken until the window ends).
   */
  #askForReserves (key: string, window: string, holders: number): Promise<void> {
    const id = `${key}\n${window}`
    const asked = this.#reserveRequests.get(id)
    if (asked !== undefined) return asked.done
    let resolve = noop
    const done = new Promise<void>((resolve_) => { resolve = resolve_ })
    const timer = setTimeout(() => request.settle(), this.#timeout)
    const request: ReserveRequest = {
      holders,
      answered: new Set(),
      done,
      settle: () => {
        clearTimeout(timer)
        this.#reserveRequests.delete(id)
        resolve()
      }
    }
    this.#reserveRequests.set(id, request)
    this.#link.publish(JSON.stringify({ ask: key, window, from: this.#processId })).catch(request.settle)
    return done
  }

  /** What another process published about reserves: a request for them, or an answer to ours. */
  onMessage (message: string): void {
    const parsed = parseReservesMessage(message)
    if (parsed === null || parsed.from === this.#processId) return
    if ('ask' in parsed) {
      const units = this.#reserves.surrender(parsed.ask, parsed.window)
      if (units === null) return
      this.#giveBackUnits(parsed.ask, parsed.window, units, parsed.from).catch(noop)
      return
    }
    if (parsed.to !== this.#processId) return
    const request = this.#reserveRequests.get(`${parsed.gave}\n${parsed.window}`)
    if (request === undefined) return
    request.answered.add(parsed.from)
    if (request.answered.size >= request.holders) request.settle()
  }

  /** Gives `units` of `key`'s `window` back, and tells `to` (no one: '') that it did. */
  #giveBackUnits (key: string, window: string, units: number, to: string): Promise<unknown> {
    const answer = JSON.stringify({ gave: key, window, from: this.#processId, to })
    return this.#link.call(giveBackRateUnitsScript, 1, [key, window, units, this.#processId, this.#link.channel, answer])
  }
}

/** Four per key: units taken, milliseconds left, the window, holders of other reserves. */
function isTakeReply (reply: unknown, keys: number): reply is Array<number | string> {
  if (!Array.isArray(reply) || reply.length !== 4 * keys) return false
  for (let i = 0; i < reply.length; i++) {
    if (typeof reply[i] !== (i % 4 === 2 ? 'string' : 'number')) return false
  }
  return true
}

/** A request for reserves (`ask`: the key) or an answer to one (`gave`), or null for neither. */
function parseReservesMessage (message: string): { ask: string, window: string, from: string } | { gave: string, window: string, from: string, to: string } | null {
  let value: unknown
  try {
    value = JSON.parse(message)
  } catch {
    return null
  }
  if (typeof value !== 'object' || value === null) return null
  const { ask, gave, window, from, to } = value as Record<string, unknown>
  if (typeof window !== 'string' || typeof from !== 'string') return null
  if (typeof ask === 'string') return { ask, window, from }
  if (typeof gave === 'string' && typeof to === 'string') return { gave, window, from, to }
  return null
}


// A user's request rate counted in Redis for every process: the batch's places taken by one Lua
// script call, and processes that run out asking the others, on a Redis channel, for the places
// they took ahead and did not use.

import { MOST_UNITS_AHEAD, RESERVE_SHARE, type RateStoreLink, type RateTake, type RateTaken, ReservedRateCounter } from './reserved-rate-counter'
import { publishedObject } from './redis-connection'
import { chunks, giveBackRateUnitsScript, type LuaScript, takeRateUnitsScript } from './redis-scripts'

/** What the Redis rate counter needs of its store's connection. */
export interface RedisRateConnection {
  /** Runs `script` within the store's timeout; rejects when Redis cannot answer. */
  call (script: LuaScript, keyCount: number, keysThenArgs: ReadonlyArray<string | number>): Promise<unknown>
  /** Publishes on {@link RedisRateConnection.channel}; rejects at once when Redis is not connected. */
  publish (message: string): Promise<unknown>
  /** The channel on which processes ask each other for the places they took ahead. */
  readonly channel: string
  /** The error of a call Redis answered with something unexpected. */
  unavailable (reason: string): Error
}

/** A wait for other processes' places of one window, by the process that ran out. */
interface ReserveRequest {
  readonly holders: number
  readonly answered: Set<string>
  readonly done: Promise<void>
  readonly settle: () => void
}

const noop = (): void => {}

/**
 * The rate counter of one Redis store: {@link RedisRateCounter.count} counts a request (see
 * LimitStore.countRequest), and the messages of the connection's channel go to
 * {@link RedisRateCounter.onMessage}.
 */
export class RedisRateCounter implements RateStoreLink {
  readonly #connection: RedisRateConnection
  readonly #processId: string
  readonly #timeout: number
  readonly #counter: ReservedRateCounter
  readonly #reserveRequests = new Map<string, ReserveRequest>()

  /** `processId` names this process to the others; `timeout` bounds a wait for their places. */
  constructor (connection: RedisRateConnection, processId: string, timeout: number) {
    this.#connection = connection
    this.#processId = processId
    this.#timeout = timeout
    this.#counter = new ReservedRateCounter(this)
  }

  /** Counts one request of `rateKey` (a full Redis key): 0 when admitted, else ms left. */
  count (rateKey: string, limit: number, windowMs: number): number | Promise<number> {
    return this.#counter.count(rateKey, limit, windowMs)
  }

  /** Gives back every place this process took ahead and did not use (it stops). */
  giveBackAll (): Array<Promise<unknown>> {
    return this.#counter.giveBackAll()
  }

  /** One script call per part of the batch (see redis-scripts' TAKE_RATE_UNITS). */
  async take (takes: readonly RateTake[]): Promise<readonly RateTaken[]> {
    const parts = await Promise.all(chunks(takes).map((part) => this.#takePart(part)))
    return parts.flat()
  }

  async #takePart (takes: readonly RateTake[]): Promise<RateTaken[]> {
    const size = takes.length
    const keysThenArgs: Array<string | number> = new Array(size * 6 + 3)
    keysThenArgs[size] = this.#processId
    keysThenArgs[size + 1] = RESERVE_SHARE
    keysThenArgs[size + 2] = MOST_UNITS_AHEAD
    for (let i = 0; i < size; i++) {
      const { key, needed, limit, windowMs, givenBack } = takes[i] as RateTake
      const at = size + 3 + 5 * i
      keysThenArgs[i] = key
      keysThenArgs[at] = needed
      keysThenArgs[at + 1] = limit
      keysThenArgs[at + 2] = windowMs
      keysThenArgs[at + 3] = givenBack?.units ?? 0
      keysThenArgs[at + 4] = givenBack?.window ?? ''
    }
    const reply = await this.#connection.call(takeRateUnitsScript, size, keysThenArgs)
    if (!isTakeReply(reply, size)) throw this.#connection.unavailable('unexpected reply')
    const answers: RateTaken[] = new Array(size)
    for (let i = 0; i < size; i++) {
      answers[i] = {
        taken: reply[4 * i] as number,
        msLeft: reply[4 * i + 1] as number,
        window: reply[4 * i + 2] as string,
        holders: reply[4 * i + 3] as number
      }
    }
    return answers
  }

  askForReserves (key: string, window: string, holders: number): Promise<void> {
    const id = `${key}\n${window}`
    const asked = this.#reserveRequests.get(id)
    if (asked !== undefined) return asked.done
    let resolve = noop
    const done = new Promise<void>((_resolve) => { resolve = _resolve })
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
    this.#connection.publish(JSON.stringify({ ask: key, window, from: this.#processId })).catch(request.settle)
    return done
  }

  giveBack (key: string, window: string, units: number, to: string): Promise<unknown> {
    const answer = JSON.stringify({ gave: key, window, from: this.#processId, to })
    return this.#connection.call(giveBackRateUnitsScript, 1, [key, window, units, this.#processId, this.#connection.channel, answer])
  }

  /** What another process published: a request for this one's places, or an answer to ours. */
  onMessage (message: string): void {
    const parsed = parseReservesMessage(message)
    if (parsed === null || parsed.from === this.#processId) return
    if ('ask' in parsed) {
      const units = this.#counter.surrender(parsed.ask, parsed.window)
      if (units !== null) this.giveBack(parsed.ask, parsed.window, units, parsed.from).catch(noop)
      return
    }
    if (parsed.to !== this.#processId) return
    const request = this.#reserveRequests.get(`${parsed.gave}\n${parsed.window}`)
    if (request === undefined) return
    request.answered.add(parsed.from)
    if (request.answered.size >= request.holders) request.settle()
  }
}

/** Four per key: places taken, milliseconds left, the window, holders of other places. */
function isTakeReply (reply: unknown, keys: number): reply is Array<number | string> {
  if (!Array.isArray(reply) || reply.length !== 4 * keys) return false
  for (let i = 0; i < reply.length; i++) {
    if (i % 4 === 2 ? typeof reply[i] !== 'string' : typeof reply[i] !== 'number') return false
  }
  return true
}

/** A request for places (`ask`: the key) or an answer to one (`gave`), or null for neither. */
function parseReservesMessage (
  message: string
): { ask: string, window: string, from: string } | { gave: string, window: string, from: string, to: string } | null {
  const value = publishedObject(message)
  if (value === null) return null
  const { ask, gave, window, from, to } = value
  if (typeof window !== 'string' || typeof from !== 'string') return null
  if (typeof ask === 'string') return { ask, window, from }
  if (typeof gave === 'string' && typeof to === 'string') return { gave, window, from, to }
  return null
}

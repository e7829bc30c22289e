// The shared limits kept in Redis, so that every process and replica of the proxy counts the
// same request rates, tunnel slots and authentication failures.

import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { ForwardProxyOptionsError } from '../protocol/errors'
import type { AuthFailureCount, LimitStore } from './limit-store'
import { connectionOf, labelOfClient, publishedObject, reconnectDelay } from './redis-connection'
import { RedisRateCounter } from './redis-rate-counter'
import { acquireSlotScript, chunks, type LuaScript, recordAuthFailureScript, releaseSlotsScript, renewSlotsScript } from './redis-scripts'

/** The `code` of every error a store call rejects with when Redis cannot answer it. */
const LIMIT_STORE_UNAVAILABLE_CODE = 'FFP_ERR_LIMIT_STORE_UNAVAILABLE'

/**
 * A store call Redis did not answer: unreachable, too slow (no answer within the store's
 * `timeout`), an error reply, or the store closed. The caller counts in its own process instead.
 * The message names the store by its label, never with credentials.
 */
class LimitStoreUnavailableError extends Error {
  /** Stable code, {@link LIMIT_STORE_UNAVAILABLE_CODE}. */
  readonly code = LIMIT_STORE_UNAVAILABLE_CODE

  constructor (label: string, reason: string) {
    super(`fastify-forward-proxy: limit store ${label} unavailable: ${reason}`)
    this.name = 'LimitStoreUnavailableError'
  }
}

/** Where the Redis limit store connects, and how long it waits. */
export interface RedisLimitStoreSettings {
  /** `redis://[user:pass@]host:port/db` or `rediss://...`; absent when `client` is given. */
  readonly url?: string
  /** The password to authenticate with; overrides any in `url`. */
  readonly password?: string
  /** For `rediss://`: the CA to trust (PEM); absent: the system's. */
  readonly ca?: string | Buffer
  /** A client the application already has, used instead of `url` and never closed by the store. */
  readonly client?: Redis
  /** Put before every key and channel of the store, e.g. `forward-proxy:`. */
  readonly keyPrefix: string
  /** Milliseconds a store call may take before it rejects. */
  readonly timeout: number
  /** Milliseconds a tunnel slot stays taken after its process last renewed it. */
  readonly leaseTime: number
}

/** One lease this process holds: the key of its slots and its member there. */
interface Lease {
  readonly slotsKey: string
  readonly id: string
}

/**
 * 'starting': not connected yet, calls wait for the first connection (within their timeout);
 * 'up': connected; 'down': unreachable, calls reject at once.
 */
type Reachability = 'starting' | 'up' | 'down'

const noop = (): void => {}

/**
 * Creates a {@link LimitStore} kept in Redis. Requests counted during one event-loop turn go to
 * Redis as one script call; tunnel slots are leases renewed every `leaseTime / 3`, so a process
 * that dies gives its slots back when they expire; authentication failures are published to
 * every process using the same `keyPrefix`. Every call rejects with a
 * {@link LimitStoreUnavailableError} within `timeout` when Redis cannot answer; nothing waits
 * for Redis to come back. Throws a ForwardProxyOptionsError for unusable settings (the message
 * never holds the URL).
 */
export function createRedisLimitStore (settings: RedisLimitStoreSettings): LimitStore {
  checkNumber('timeout', settings.timeout)
  checkNumber('leaseTime', settings.leaseTime)
  if (settings.client !== undefined) return new RedisLimitStore(settings, settings.client, false, labelOfClient(settings.client))
  if (settings.url === undefined) throw new ForwardProxyOptionsError('url', 'is required when no client is given')
  const { options, label } = connectionOf(settings.url, settings)
  return new RedisLimitStore(settings, new Redis(options), true, label)
}

class RedisLimitStore implements LimitStore {
  readonly label: string
  readonly #client: Redis
  readonly #ownsClient: boolean
  readonly #timeout: number
  readonly #leaseTime: number
  readonly #rateKey: string
  readonly #slotsKey: string
  readonly #authKey: string
  readonly #channel: string
  readonly #ratesChannel: string
  // Names this process in leases and reserves.
  readonly #processId = randomBytes(9).toString('base64url')
  readonly #leasePrefix = `${this.#processId}:`
  readonly #rates: RedisRateCounter
  #leaseCount = 0
  readonly #held = new Map<string, Lease>()
  readonly #renewal: NodeJS.Timeout
  #reachability: Reachability = 'starting'
  readonly #started: Promise<void>
  #startedOrFailed: (error?: Error) => void = noop
  #availabilityListener: (available: boolean, reason?: Error) => void = noop
  #authListener: (client: string, count: AuthFailureCount) => void = noop
  #subscriber: Redis | null = null
  #closing: Promise<void> | null = null
  readonly #clientListeners: ReadonlyArray<[string, (error?: Error) => void]>

  constructor (settings: RedisLimitStoreSettings, client: Redis, ownsClient: boolean, label: string) {
    this.label = label
    this.#client = client
    this.#ownsClient = ownsClient
    this.#timeout = settings.timeout
    this.#leaseTime = Math.ceil(settings.leaseTime)
    this.#rateKey = `${settings.keyPrefix}rate:`
    this.#slotsKey = `${settings.keyPrefix}slots:`
    this.#authKey = `${settings.keyPrefix}auth:`
    this.#channel = `${settings.keyPrefix}auth-failures`
    this.#ratesChannel = `${settings.keyPrefix}rate-reserves`
    this.#rates = new RedisRateCounter({
      call: (script, keyCount, keysThenArgs) => this.#call(script, keyCount, keysThenArgs),
      publish: (message) => client.status === 'ready' ? client.publish(this.#ratesChannel, message) : Promise.reject(this.#unavailable('not connected')),
      channel: this.#ratesChannel,
      unavailable: (reason) => this.#unavailable(reason)
    }, this.#processId, this.#timeout)
    this.#started = new Promise<void>((resolve, reject) => {
      this.#startedOrFailed = (error) => { if (error === undefined) resolve(); else reject(error) }
    })
    this.#started.catch(noop)
    this.#clientListeners = [
      ['ready', () => this.#reached()],
      // Connection errors and Redis's own (a refused password) name neither a password nor the URL.
      ['error', (error?: Error) => this.#lost(error?.message)],
      ['close', () => this.#lost()]
    ]
    for (const [event, listener] of this.#clientListeners) client.on(event, listener)
    if (client.status === 'ready') this.#reached()
    else if (client.status === 'end') this.#lost()
    else if (client.status === 'wait') client.connect().catch(noop)
    this.#renewal = setInterval(() => this.#renewLeases(), Math.max(1, Math.floor(this.#leaseTime / 3)))
    this.#renewal.unref()
  }

  countRequest (key: string, limit: number, windowMs: number): number | Promise<number> {
    if (this.#closing !== null) return Promise.reject(this.#unavailable('closed'))
    if (!(limit >= 0) || !(windowMs >= 1) || !Number.isFinite(windowMs)) return Promise.reject(outOfRange(limit >= 0 ? 'windowMs' : 'limit'))
    // Places taken ahead are asked for by other processes that run out: listen for them.
    this.#subscriber ??= this.#subscribe()
    return this.#rates.count(this.#rateKey + key, limit, Math.ceil(windowMs))
  }

  async acquireSlot (key: string, limit: number): Promise<(() => void) | null> {
    if (this.#closing !== null) throw this.#unavailable('closed')
    if (!(limit >= 0)) throw outOfRange('limit')
    const lease: Lease = { slotsKey: this.#slotsKey + key, id: this.#leasePrefix + String(++this.#leaseCount) }
    const taken = await this.#call(acquireSlotScript, 1, [lease.slotsKey, limit, lease.id, this.#leaseTime])
    if (taken !== 1) return null
    if (this.#closing !== null) {
      this.#giveBack([lease]).catch(noop)
      throw this.#unavailable('closed')
    }
    this.#held.set(lease.id, lease)
    return () => {
      // Once given back (or the store closed) the lease is no longer ours to remove.
      if (!this.#held.delete(lease.id)) return
      this.#giveBack([lease]).catch(noop)
    }
  }

  async recordAuthFailure (client: string, windowMs: number): Promise<AuthFailureCount> {
    if (this.#closing !== null) throw this.#unavailable('closed')
    if (!(windowMs >= 1) || !Number.isFinite(windowMs)) throw outOfRange('windowMs')
    const reply = await this.#call(recordAuthFailureScript, 1, [this.#authKey + client, Math.ceil(windowMs), this.#channel, client])
    if (!isNumbers(reply, 2)) throw this.#unavailable('unexpected reply')
    const [failures, msLeft] = reply as [number, number]
    return { failures, msLeft }
  }

  onAuthFailures (listener: (client: string, count: AuthFailureCount) => void): void {
    this.#authListener = listener
    if (this.#subscriber === null && this.#closing === null) this.#subscriber = this.#subscribe()
  }

  onAvailability (listener: (available: boolean, reason?: Error) => void): void {
    this.#availabilityListener = listener
  }

  close (): Promise<void> {
    this.#closing ??= this.#shutdown()
    return this.#closing
  }

  #renewLeases (): void {
    if (this.#held.size === 0) return
    for (const leases of chunks([...this.#held.values()])) {
      const keysThenArgs: Array<string | number> = leases.map((lease) => lease.slotsKey)
      keysThenArgs.push(this.#leaseTime, ...leases.map((lease) => lease.id))
      // A renewal Redis misses is retried at the next tick; a lease it never renews expires.
      this.#call(renewSlotsScript, leases.length, keysThenArgs).catch(noop)
    }
  }

  async #giveBack (leases: readonly Lease[]): Promise<void> {
    await Promise.all(chunks(leases).map((part) => {
      return this.#call(releaseSlotsScript, part.length, [...part.map((lease) => lease.slotsKey), ...part.map((lease) => lease.id)])
    }))
  }

  /**
   * Runs `script` within the timeout. Only a connected client is sent anything (nothing queues
   * while Redis is unreachable), except while the first connection is being made.
   */
  #call (script: LuaScript, keyCount: number, keysThenArgs: ReadonlyArray<string | number>): Promise<unknown> {
    const client = this.#client
    let reply: Promise<unknown>
    if (client.status === 'ready') reply = script.run(client, keyCount, keysThenArgs)
    else if (this.#reachability === 'starting') reply = this.#started.then(() => script.run(client, keyCount, keysThenArgs))
    else return Promise.reject(this.#unavailable(`not connected (${client.status})`))
    return new Promise((resolve, reject) => {
      let timedOut = false
      const timer = setTimeout(() => {
        timedOut = true
        this.#lost(`no answer within ${this.#timeout} ms`)
        reject(this.#unavailable(`no answer within ${this.#timeout} ms`))
      }, this.#timeout)
      reply.then((value) => {
        if (timedOut) return
        clearTimeout(timer)
        this.#reached()
        resolve(value)
      }, (error: unknown) => {
        if (timedOut) return
        clearTimeout(timer)
        // An error reply comes from a Redis that is there; anything else means it is not.
        if (!(error instanceof Error && error.name === 'ReplyError')) this.#lost(error instanceof Error ? error.message : String(error))
        if (error instanceof LimitStoreUnavailableError) reject(error)
        else reject(this.#unavailable(error instanceof Error ? error.message : String(error)))
      })
    })
  }

  #reached (): void {
    const was = this.#reachability
    this.#reachability = 'up'
    if (was === 'starting') this.#startedOrFailed()
    else if (was === 'down' && this.#closing === null) this.#availabilityListener(true)
  }

  #lost (reason?: string): void {
    const was = this.#reachability
    this.#reachability = 'down'
    const error = was === 'starting'
      ? this.#unavailable(reason === undefined ? 'could not connect' : `could not connect: ${reason}`)
      : this.#unavailable(reason ?? 'the connection was lost')
    if (was === 'starting') this.#startedOrFailed(error)
    if (was !== 'down' && this.#closing === null) this.#availabilityListener(false, error)
  }

  /** A second connection, in subscriber mode, on which every process's failures arrive. */
  #subscribe (): Redis {
    const subscriber = this.#client.duplicate({
      // Subscribing is the only command it sends: it may wait for the connection, and is
      // sent again after each reconnection.
      enableOfflineQueue: true,
      maxRetriesPerRequest: null,
      commandTimeout: undefined,
      lazyConnect: false,
      autoResubscribe: true,
      retryStrategy: reconnectDelay
    })
    subscriber.on('error', noop)
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.#ratesChannel) {
        this.#rates.onMessage(message)
        return
      }
      const failure = parseAuthFailure(message)
      if (failure !== null) this.#authListener(failure.client, { failures: failure.failures, msLeft: failure.msLeft })
    })
    subscriber.subscribe(this.#channel, this.#ratesChannel).catch(noop)
    return subscriber
  }

  async #shutdown (): Promise<void> {
    clearInterval(this.#renewal)
    const leases = [...this.#held.values()]
    this.#held.clear()
    const reserves = this.#rates.giveBackAll()
    await Promise.all([this.#giveBack(leases), ...reserves]).catch(noop)
    this.#subscriber?.disconnect()
    if (this.#ownsClient) await this.#quit()
    else for (const [event, listener] of this.#clientListeners) this.#client.off(event, listener)
  }

  /** QUIT, within the timeout; the connection is dropped when Redis does not answer. */
  async #quit (): Promise<void> {
    const client = this.#client
    if (client.status === 'ready') {
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<void>((resolve) => { timer = setTimeout(resolve, this.#timeout) })
      await Promise.race([client.quit().catch(noop), late])
      clearTimeout(timer)
    }
    client.disconnect()
  }

  #unavailable (reason: string): LimitStoreUnavailableError {
    return new LimitStoreUnavailableError(this.label, reason)
  }
}

function checkNumber (name: string, value: number): void {
  if (!(value > 0) || !Number.isFinite(value)) throw new ForwardProxyOptionsError(name, 'must be a positive number of milliseconds')
}

function outOfRange (what: string): RangeError {
  return Object.assign(new RangeError(`fastify-forward-proxy: limit store: ${what} is out of range`), { code: 'ERR_OUT_OF_RANGE' })
}

function isNumbers (reply: unknown, length: number): reply is number[] {
  return Array.isArray(reply) && reply.length === length && reply.every((value) => typeof value === 'number')
}

/** A published failure, or null for a message that is not one (another publisher's). */
function parseAuthFailure (message: string): { client: string, failures: number, msLeft: number } | null {
  const value = publishedObject(message)
  if (value === null) return null
  const { client, failures, msLeft } = value
  if (typeof client !== 'string' || typeof failures !== 'number' || typeof msLeft !== 'number') return null
  return { client, failures, msLeft }
}

// The Lua scripts of the Redis limit store: each counts atomically in Redis, on Redis's own
// clock where time matters, and is run by its SHA1 (sent whole only when Redis lacks it).

import { createHash } from 'node:crypto'
import type { Redis } from 'ioredis'

// Redis's own clock, so that the leases of replicas whose clocks differ expire alike.
const SERVER_MS = `local function serverMs ()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
local function keepFor (key, ms)
  if redis.call('PTTL', key) < ms then redis.call('PEXPIRE', key, ms) end
end
`

// One INCRBY per counter for all the requests of a batch that count on it: they get the counts
// from count - added + 1 to count, in their order, exactly as one INCR each would. KEYS[i]: a
// rate counter; ARGV[2i-1], ARGV[2i]: the requests added and the window. Answers, per counter,
// its count after them and the milliseconds left in its window (>= 1).
const COUNT_REQUESTS = `local results = {}
for i = 1, #KEYS do
  local added = tonumber(ARGV[2 * i - 1])
  local count = redis.call('INCRBY', KEYS[i], added)
  local windowMs = ARGV[2 * i]
  if count == added then redis.call('PEXPIRE', KEYS[i], windowMs) end
  local msLeft = redis.call('PTTL', KEYS[i])
  if msLeft < 0 then
    redis.call('PEXPIRE', KEYS[i], windowMs)
    msLeft = tonumber(windowMs)
  elseif msLeft == 0 then
    msLeft = 1
  end
  results[2 * i - 1] = count
  results[2 * i] = msLeft
end
return results`

// KEYS[1]: the leases of one key (member: lease id, score: expiry). ARGV: limit, lease id, lease ms.
const ACQUIRE_SLOT = `${SERVER_MS}
local now = serverMs()
local leaseMs = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + leaseMs, ARGV[2])
keepFor(KEYS[1], leaseMs)
return 1`

// KEYS[i]: where lease ARGV[i + 1] is; ARGV[1]: lease ms. A lease that already expired stays gone.
const RENEW_SLOTS = `${SERVER_MS}
local now = serverMs()
local leaseMs = tonumber(ARGV[1])
for i = 1, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
  redis.call('ZADD', KEYS[i], 'XX', now + leaseMs, ARGV[i + 1])
  keepFor(KEYS[i], leaseMs)
end
return #KEYS`

// KEYS[i]: where lease ARGV[i] is.
const RELEASE_SLOTS = `for i = 1, #KEYS do redis.call('ZREM', KEYS[i], ARGV[i]) end
return #KEYS`

// KEYS[1]: a client's failure counter. ARGV: window ms, channel, client. Answers {failures, msLeft}.
const RECORD_AUTH_FAILURE = `local failures = redis.call('INCR', KEYS[1])
if failures == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local msLeft = redis.call('PTTL', KEYS[1])
if msLeft < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  msLeft = tonumber(ARGV[1])
elseif msLeft == 0 then
  msLeft = 1
end
redis.call('PUBLISH', ARGV[2], cjson.encode({ client = ARGV[3], failures = failures, msLeft = msLeft }))
return { failures, msLeft }`

/** A Lua script run by its SHA1 (EVALSHA), sent whole only when Redis does not have it yet. */
export class LuaScript {
  readonly #body: string
  readonly #sha: string

  constructor (body: string) {
    this.#body = body
    this.#sha = createHash('sha1').update(body).digest('hex')
  }

  async run (client: Redis, keyCount: number, keysThenArgs: ReadonlyArray<string | number>): Promise<unknown> {
    try {
      return await client.evalsha(this.#sha, keyCount, ...keysThenArgs)
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error
      return await client.eval(this.#body, keyCount, ...keysThenArgs)
    }
  }
}

/** Counts the requests of a batch, one INCRBY per counter (COUNT_REQUESTS). */
export const countRequestsScript = new LuaScript(COUNT_REQUESTS)
/** Takes one slot of a key as a lease, or answers 0 when all are taken. */
export const acquireSlotScript = new LuaScript(ACQUIRE_SLOT)
/** Renews leases this process holds; an expired one stays gone. */
export const renewSlotsScript = new LuaScript(RENEW_SLOTS)
/** Gives leases back. */
export const releaseSlotsScript = new LuaScript(RELEASE_SLOTS)
/** Counts a failed authentication and publishes the count to every process. */
export const recordAuthFailureScript = new LuaScript(RECORD_AUTH_FAILURE)

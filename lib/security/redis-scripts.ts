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

// A user's rate window is a hash: `w` names the window (Redis's time when it opened, so that
// units of an ended window are never given back to the next), `n` the units taken in it, and
// `h:<process>` marks each process that holds units ahead of its requests (its reserve).
// KEYS[i]: a window; ARGV[1]: this process, ARGV[2]: the share of what is left a reserve may
// take (1/ARGV[2]), ARGV[3]: the most units a reserve may take; then five per key: the units
// the batch needs, the limit, the window's length, units given back and the window they came
// from. The units taken are the ones needed, plus a reserve while plenty are left; none beyond
// the limit. Answers four per key: units taken, milliseconds left in the window (>= 1), the
// window, and (when fewer were taken than needed) how many other processes hold a reserve.
const TAKE_RATE_UNITS = `local time = redis.call('TIME')
local opened = time[1] .. '.' .. time[2]
local holder = 'h:' .. ARGV[1]
local share = tonumber(ARGV[2])
local mostAhead = tonumber(ARGV[3])
local results = {}
for i = 1, #KEYS do
  local key = KEYS[i]
  local at = 3 + 5 * (i - 1)
  local needed = tonumber(ARGV[at + 1])
  local limit = tonumber(ARGV[at + 2])
  local windowMs = ARGV[at + 3]
  local givenBack = tonumber(ARGV[at + 4])
  local window = redis.call('HGET', key, 'w')
  if not window then
    window = opened
    redis.call('HSET', key, 'w', window, 'n', 0)
    redis.call('PEXPIRE', key, windowMs)
  elseif givenBack > 0 and ARGV[at + 5] == window then
    redis.call('HINCRBY', key, 'n', -givenBack)
    redis.call('HDEL', key, holder)
  end
  local left = limit - tonumber(redis.call('HGET', key, 'n'))
  local taken = 0
  if left > 0 then
    local ahead = math.min(mostAhead, math.floor((left - needed) / share))
    if ahead < 0 then ahead = 0 end
    taken = math.min(left, needed + ahead)
    redis.call('HINCRBY', key, 'n', taken)
    if ahead > 0 then redis.call('HSET', key, holder, 1) end
  end
  local holders = 0
  if taken < needed then
    holders = redis.call('HLEN', key) - 2 - redis.call('HEXISTS', key, holder)
  end
  local msLeft = redis.call('PTTL', key)
  if msLeft < 0 then
    redis.call('PEXPIRE', key, windowMs)
    msLeft = tonumber(windowMs)
  elseif msLeft == 0 then
    msLeft = 1
  end
  results[4 * i - 3] = taken
  results[4 * i - 2] = msLeft
  results[4 * i - 1] = window
  results[4 * i] = holders
end
return results`

// KEYS[1]: a rate window. ARGV: the window the units came from, the units, this process, the
// channel and the message that tells the process that asked for them. Units of a window that
// ended are not given back (they went with it).
const GIVE_BACK_RATE_UNITS = `if redis.call('HGET', KEYS[1], 'w') == ARGV[1] then
  local units = tonumber(ARGV[2])
  if units > 0 then redis.call('HINCRBY', KEYS[1], 'n', -units) end
  redis.call('HDEL', KEYS[1], 'h:' .. ARGV[3])
end
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1`

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

/** Takes the rate units a batch of requests needs, and a reserve while plenty are left. */
export const takeRateUnitsScript = new LuaScript(TAKE_RATE_UNITS)
/** Gives a reserve's unused units back to their window, and says so to the process that asked. */
export const giveBackRateUnitsScript = new LuaScript(GIVE_BACK_RATE_UNITS)
/** Takes one slot of a key as a lease, or answers 0 when all are taken. */
export const acquireSlotScript = new LuaScript(ACQUIRE_SLOT)
/** Renews leases this process holds; an expired one stays gone. */
export const renewSlotsScript = new LuaScript(RENEW_SLOTS)
/** Gives leases back. */
export const releaseSlotsScript = new LuaScript(RELEASE_SLOTS)
/** Counts a failed authentication and publishes the count to every process. */
export const recordAuthFailureScript = new LuaScript(RECORD_AUTH_FAILURE)

/** Keys per script call, at most: bounds the time one script holds Redis. */
const MAX_KEYS_PER_CALL = 1000

/** `items` in parts of at most MAX_KEYS_PER_CALL, one script call each. */
export function chunks<T> (items: readonly T[]): T[][] {
  const parts: T[][] = []
  for (let start = 0; start < items.length; start += MAX_KEYS_PER_CALL) parts.push(items.slice(start, start + MAX_KEYS_PER_CALL))
  return parts
}

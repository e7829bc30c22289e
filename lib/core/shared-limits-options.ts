// Where the limits shared between processes are counted: the `redis` option of forwardProxy,
// checked and resolved with its defaults, and the store the bundled server's workers share.

import type { Redis } from 'ioredis'
import type { ForwardProxyRedisOptions } from '../../types/shared-limits'
import { ForwardProxyOptionsError } from '../protocol/errors'
import type { LimitStoreFailureMode } from '../security/shared-limits'
import type { LimitStore } from '../security/limit-store'

/**
 * An option key of forwardProxy for the bundled server only (a symbol, so no application sets it
 * by accident and option checks never see it): the store its workers share, used when no
 * `redis` is configured. Its value is a {@link LimitStore}.
 */
export const WORKERS_LIMIT_STORE = Symbol('fastify-forward-proxy.workersLimitStore')

/** The store of the {@link WORKERS_LIMIT_STORE} option in `options`, if any. */
export function workersLimitStoreOf (options: object): LimitStore | null {
  return (options as { [WORKERS_LIMIT_STORE]?: LimitStore })[WORKERS_LIMIT_STORE] ?? null
}

/** The `redis` option resolved: exactly one of `url` and `client`. */
export interface ResolvedRedisSettings {
  readonly url: string | null
  readonly client: Redis | null
  readonly password: string | null
  readonly ca: string | Buffer | null
  readonly keyPrefix: string
  readonly onError: LimitStoreFailureMode
  readonly timeout: number
  readonly leaseTime: number
}

/** Defaults of the `redis` option. */
const DEFAULT_REDIS_SETTINGS = { keyPrefix: 'forward-proxy:', onError: 'allow', timeout: 200, leaseTime: 30_000 } as const

const KEYS = ['url', 'password', 'ca', 'client', 'keyPrefix', 'onError', 'timeout', 'leaseTime']

/**
 * Checks the `redis` option and fills in its defaults; null when it is absent.
 * @throws ForwardProxyOptionsError naming the first bad field.
 */
export function resolveRedisOptions (redis: ForwardProxyRedisOptions | undefined): ResolvedRedisSettings | null {
  if (redis === undefined) return null
  if (typeof redis !== 'object' || redis === null) throw new ForwardProxyOptionsError('redis', 'must be an object with a url or a client')
  const unknown = Object.keys(redis).find((key) => !KEYS.includes(key))
  if (unknown !== undefined) throw new ForwardProxyOptionsError(`redis.${unknown}`, `is not a known option (known: ${KEYS.join(', ')})`)
  const {
    url,
    client,
    password,
    ca,
    keyPrefix = DEFAULT_REDIS_SETTINGS.keyPrefix,
    onError = DEFAULT_REDIS_SETTINGS.onError,
    timeout = DEFAULT_REDIS_SETTINGS.timeout,
    leaseTime = DEFAULT_REDIS_SETTINGS.leaseTime
  } = redis
  if ((url === undefined) === (client === undefined)) throw new ForwardProxyOptionsError('redis', 'needs exactly one of url and client')
  if (url !== undefined) checkUrl(url)
  if (client !== undefined && (typeof client !== 'object' || client === null || typeof (client as Partial<Redis>).duplicate !== 'function')) {
    throw new ForwardProxyOptionsError('redis.client', 'must be an ioredis client (new Redis(...))')
  }
  if (password !== undefined && (typeof password !== 'string' || password === '')) throw new ForwardProxyOptionsError('redis.password', 'must be a non-empty string')
  if (ca !== undefined && typeof ca !== 'string' && !Buffer.isBuffer(ca)) throw new ForwardProxyOptionsError('redis.ca', 'must be a PEM string or Buffer')
  if (ca !== undefined && (url === undefined || !url.startsWith('rediss:'))) throw new ForwardProxyOptionsError('redis.ca', 'applies to a rediss:// url only')
  if (typeof keyPrefix !== 'string' || keyPrefix === '') throw new ForwardProxyOptionsError('redis.keyPrefix', 'must be a non-empty string')
  if (onError !== 'allow' && onError !== 'deny') throw new ForwardProxyOptionsError('redis.onError', 'must be "allow" or "deny"')
  checkMilliseconds('redis.timeout', timeout, 1, 60_000)
  checkMilliseconds('redis.leaseTime', leaseTime, 300, 3_600_000)
  return { url: url ?? null, client: client ?? null, password: password ?? null, ca: ca ?? null, keyPrefix, onError, timeout, leaseTime }
}

/**
 * The first field of the `redis` settings that differs between two registrations' options, or
 * null: the store is opened once, at registration.
 */
export function changedRedisSetting (current: ResolvedRedisSettings | null, next: ResolvedRedisSettings | null): string | null {
  if ((current === null) !== (next === null)) return 'redis'
  if (current === null || next === null) return null
  for (const key of ['url', 'client', 'password', 'keyPrefix', 'onError', 'timeout', 'leaseTime'] as const) {
    if (current[key] !== next[key]) return `redis.${key}`
  }
  const [a, b] = [current.ca, next.ca]
  if (a === null || b === null ? a !== b : !Buffer.from(a).equals(Buffer.from(b))) return 'redis.ca'
  return null
}

function checkUrl (url: unknown): void {
  let parsed: URL | null = null
  try {
    parsed = typeof url === 'string' ? new URL(url) : null
  } catch {}
  // The text is never repeated: it may hold a password.
  if (parsed === null || (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') || parsed.hostname === '') {
    throw new ForwardProxyOptionsError('redis.url', 'must be a URL redis://host:port/db or rediss://host:port/db')
  }
  if (parsed.pathname !== '' && parsed.pathname !== '/' && !/^\/\d+$/.test(parsed.pathname)) {
    throw new ForwardProxyOptionsError('redis.url', 'names its database by number: redis://host:port/0')
  }
}

function checkMilliseconds (option: string, value: unknown, min: number, max: number): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ForwardProxyOptionsError(option, `must be an integer of milliseconds from ${min} to ${max}`)
  }
}

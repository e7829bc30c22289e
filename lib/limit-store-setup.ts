// Opens the store of the limits shared between processes for one registration: the `redis`
// option's, or the one the bundled server's workers share; with its log lines and metrics.

import type { FastifyBaseLogger } from 'fastify'
import type { ResolvedRedisSettings } from './core/shared-limits-options'
import type { LimitStore } from './security/limit-store'
import { SharedLimits, type LimitStoreFailureMode } from './security/shared-limits'
import { recordLimitStoreTransition } from './telemetry/metrics'

/**
 * The shared limits of a registration: counted in Redis with a `redis` option, else in the
 * store of the bundled server's workers when it passed one, else null (each process counts its
 * own). Every transition of the store is logged once and counted in
 * `forward_proxy.limit_store.transitions`.
 */
export function openSharedLimits (redis: ResolvedRedisSettings | null, workersStore: LimitStore | null, log: FastifyBaseLogger): SharedLimits | null {
  if (redis !== null) {
    const store = redisLimitStoreModule().createRedisLimitStore({
      ...(redis.url === null ? {} : { url: redis.url }),
      ...(redis.client === null ? {} : { client: redis.client }),
      ...(redis.password === null ? {} : { password: redis.password }),
      ...(redis.ca === null ? {} : { ca: redis.ca }),
      keyPrefix: redis.keyPrefix,
      timeout: redis.timeout,
      leaseTime: redis.leaseTime
    })
    return new SharedLimits(store, redis.onError, transitionsLoggedTo(log, redis.onError))
  }
  if (workersStore !== null) return new SharedLimits(workersStore, 'allow', transitionsLoggedTo(log, 'allow'))
  return null
}

function transitionsLoggedTo (log: FastifyBaseLogger, onError: LimitStoreFailureMode) {
  const meanwhile = onError === 'allow'
    ? 'until it is back, each process counts its own limits'
    : 'until it is back, requests whose limits it counts are answered 503'
  return {
    lost (store: string, error: Error): void {
      recordLimitStoreTransition('lost')
      log.warn({ limitStore: store, reason: error.message }, `shared limits: ${store} cannot be reached; ${meanwhile}`)
    },
    back (store: string): void {
      recordLimitStoreTransition('back')
      log.info({ limitStore: store }, `shared limits: ${store} is back; limits are shared again`)
    }
  }
}

// Loaded only with a `redis` option: ioredis costs start-up time and resident memory that a
// proxy counting its limits alone has no use for.
function redisLimitStoreModule (): typeof import('./security/redis-limit-store') {
  return require('./security/redis-limit-store') as typeof import('./security/redis-limit-store')
}

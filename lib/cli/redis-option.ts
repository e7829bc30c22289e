// The plugin's `redis` option built from the configuration file's `redis` key: the password read
// from the environment or a private file, the CA from its file.

import type { ForwardProxyRedisOptions } from '../../types/shared-limits'
import { readConfigFile } from './config-files'
import { readCredential } from './secrets'
import type { RedisConfig } from './redis-config'

/**
 * The plugin's `redis` option from the file's: the password read now from its variable or file
 * (one trailing line break removed), the CA file read.
 * @throws ConfigError for a variable that is not set, a file that cannot be read or others may read.
 */
export function redisOption (redis: RedisConfig, env: NodeJS.ProcessEnv = process.env): ForwardProxyRedisOptions {
  const { url, keyPrefix, onError, timeout, leaseTime, ca } = redis
  return {
    url,
    ...(redis.password === undefined ? {} : { password: readCredential(redis.password, '/redis/password', { file: 'password file', thing: 'password' }, env) }),
    ...(ca === undefined ? {} : { ca: readConfigFile(ca, '/redis/ca') }),
    ...(keyPrefix === undefined ? {} : { keyPrefix }),
    ...(onError === undefined ? {} : { onError }),
    ...(timeout === undefined ? {} : { timeout }),
    ...(leaseTime === undefined ? {} : { leaseTime })
  }
}

// The plugin's `redis` option built from the configuration file's `redis` key: the password read
// from the environment or a private file, the CA from its file.

import type { ForwardProxyRedisOptions } from '../../types/shared-limits'
import { readConfigFile, readPrivateFile } from './config'
import { ConfigError } from './config-errors'
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
    ...(redis.password === undefined ? {} : { password: readPassword(redis.password, env) }),
    ...(ca === undefined ? {} : { ca: readConfigFile(ca, '/redis/ca') }),
    ...(keyPrefix === undefined ? {} : { keyPrefix }),
    ...(onError === undefined ? {} : { onError }),
    ...(timeout === undefined ? {} : { timeout }),
    ...(leaseTime === undefined ? {} : { leaseTime })
  }
}

function readPassword (password: NonNullable<RedisConfig['password']>, env: NodeJS.ProcessEnv): string {
  let value: string
  if (password.env !== undefined) {
    const found = env[password.env]
    if (found === undefined) throw new ConfigError(`/redis/password: the environment variable ${password.env} is not set`)
    value = found
  } else {
    const content = readPrivateFile(password.file ?? '', '/redis/password', { file: 'password file', thing: 'password' })
    value = content.toString('utf8')
    content.fill(0)
  }
  value = value.replace(/\r?\n$/, '')
  if (value === '') throw new ConfigError('/redis/password: the value is empty')
  return value
}

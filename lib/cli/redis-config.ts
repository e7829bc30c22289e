// The configuration file's `redis` key and the checks its schema cannot make.

import { resolve } from 'node:path'
import { ConfigError } from './config-errors'

/** The `redis` key of the configuration file. */
export interface RedisConfig {
  /** `redis://host:port/db` or `rediss://host:port/db`, without a password. */
  url: string
  /** Where the password is read: an environment variable or a file others cannot read. */
  password?: { env?: string, file?: string }
  /** With `rediss://`: a PEM file of the CA to trust. */
  ca?: string
  keyPrefix?: string
  onError?: 'allow' | 'deny'
  timeout?: number
  leaseTime?: number
}

/**
 * Checks what the schema cannot say about `redis` and resolves its paths against
 * `baseDirectory`: the URL carries no password (it belongs in `password`, read from the
 * environment or a file), `password` has exactly one of `env` and `file`, `ca` goes with
 * `rediss://` only.
 * @throws ConfigError naming the key, never repeating the URL.
 */
export function checkRedisConfig (redis: RedisConfig, source: string, baseDirectory: string): RedisConfig {
  let url: URL
  try {
    url = new URL(redis.url)
  } catch {
    throw new ConfigError(`${source}: /redis/url: is not a URL; expected redis://host:port/db or rediss://host:port/db`)
  }
  if (url.password !== '') {
    throw new ConfigError(`${source}: /redis/url: holds a password; the configuration file never does: remove it from the URL and give /redis/password as { "env": VARIABLE } or { "file": PATH }`)
  }
  const { password, ca } = redis
  if (password !== undefined && (password.env === undefined) === (password.file === undefined)) {
    throw new ConfigError(`${source}: /redis/password: give exactly one of "env" (an environment variable) and "file" (a file others cannot read)`)
  }
  if (ca !== undefined && url.protocol !== 'rediss:') throw new ConfigError(`${source}: /redis/ca: applies to a rediss:// URL only`)
  return {
    ...redis,
    ...(password?.file === undefined ? {} : { password: { file: resolve(baseDirectory, password.file) } }),
    ...(ca === undefined ? {} : { ca: resolve(baseDirectory, ca) })
  }
}

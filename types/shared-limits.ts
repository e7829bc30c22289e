import type { Redis } from 'ioredis'

/**
 * `redis`: count the limits that concern a user or a client in one Redis (or Valkey) for every
 * process and replica using it, instead of in each process: a user's `requestsPerMinute`, its
 * `maxConcurrentTunnels` and the authentication lockout (`auth.failureLimit`). The `limits`
 * option stays per process. Give either `url` or `client`. Fixed at registration:
 * `reconfigure` refuses a change.
 */
export interface ForwardProxyRedisOptions {
  /**
   * `redis://[user:password@]host:port/db`, or `rediss://` for TLS. The URL is never logged with
   * its credentials.
   */
  url?: string
  /** The password (Redis `AUTH`); overrides one in `url`. */
  password?: string
  /** With `rediss://`: the CA certificate (PEM) to trust, instead of Node's trust store. */
  ca?: string | Buffer
  /**
   * A client the application already has (ioredis 6). The proxy sends its commands on it and
   * opens one more connection of its own (`client.duplicate()`) to hear what other processes
   * count; it never closes the application's client.
   */
  client?: Redis
  /** Prefix of every key and channel the proxy uses. Default `"forward-proxy:"`. */
  keyPrefix?: string
  /**
   * While Redis cannot be reached: `"allow"` counts in each process (the limits hold per
   * process), `"deny"` answers 503 `proxy_internal_error` to every request whose limits it
   * must count. Failed authentications are counted per process either way. Default `"allow"`.
   */
  onError?: 'allow' | 'deny'
  /**
   * Milliseconds a request waits at most for Redis before it is counted as `onError` says.
   * Default 200.
   */
  timeout?: number
  /**
   * Milliseconds a process holds a user's tunnel slot without renewing it: the slots of a
   * process that died come back after this long. Live processes renew theirs every third of it.
   * Default 30000.
   */
  leaseTime?: number
}

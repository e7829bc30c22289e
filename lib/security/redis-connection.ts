// Where the Redis limit store connects: the ioredis options and label of a redis:// or rediss://
// URL, the label of a client the application passed, and what its channels carry.

import type { Redis, RedisOptions } from 'ioredis'
import { ForwardProxyOptionsError } from '../protocol/errors'

/** How long one connection attempt may take. */
const CONNECT_TIMEOUT_MS = 2000
/** The longest pause between reconnection attempts. */
const MAX_RECONNECT_DELAY_MS = 1000

/** The client options and label of a `redis://` or `rediss://` URL; neither leaks its password. */
/**
 * The ioredis options of a store that connects itself to `text` (`redis://` or `rediss://`), and
 * its label: scheme, host, port and database, never credentials. Calls fail at once while
 * Redis is unreachable (no offline queue), within `timeout`; reconnection goes on.
 * @throws ForwardProxyOptionsError (option `url`), never repeating the URL.
 */
export function connectionOf (
  text: string,
  settings: { readonly password?: string, readonly ca?: string | Buffer, readonly timeout: number }
): { options: RedisOptions, label: string } {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    // The parser's error holds the URL, password included.
    throw new ForwardProxyOptionsError('url', 'must be a redis:// or rediss:// URL')
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') throw new ForwardProxyOptionsError('url', 'must be a redis:// or rediss:// URL')
  if (url.hostname === '') throw new ForwardProxyOptionsError('url', 'must name a host')
  const path = url.pathname.replace(/^\//, '')
  if (!/^\d*$/.test(path)) throw new ForwardProxyOptionsError('url', 'must end with a database number, e.g. /0')
  const db = path === '' ? 0 : Number(path)
  const port = url.port === '' ? 6379 : Number(url.port)
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
  const password = settings.password ?? decoded(url.password)
  const options: RedisOptions = {
    host,
    port,
    db,
    username: decoded(url.username),
    password,
    tls: url.protocol === 'rediss:' ? (settings.ca === undefined ? {} : { ca: settings.ca }) : undefined,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: settings.timeout,
    connectTimeout: CONNECT_TIMEOUT_MS,
    retryStrategy: reconnectDelay
  }
  return { options, label: `${url.protocol}//${url.hostname}:${port}/${db}` }
}

/** A user name or password of a URL, percent-decoded; undefined when empty. */
function decoded (part: string): string | undefined {
  if (part === '') return undefined
  try {
    return decodeURIComponent(part)
  } catch {
    throw new ForwardProxyOptionsError('url', 'has a malformed percent-encoding in its user or password')
  }
}

/** The label of a client the application passed: where it connects, without credentials. */
export function labelOfClient (client: Redis): string {
  const { host, port, db, path, tls } = client.options
  if (path !== undefined && path !== null && path !== '') return `unix:${path}`
  const hostname = host !== undefined && host.includes(':') ? `[${host}]` : host ?? 'localhost'
  return `${tls === undefined ? 'redis' : 'rediss'}://${hostname}:${port ?? 6379}/${db ?? 0}`
}

/** Reconnects for as long as the store lives, backing off to at most a second between attempts. */
export function reconnectDelay (attempt: number): number {
  return Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS)
}

/** A message published on one of the store's channels, as an object; null when it is not one. */
export function publishedObject (message: string): Record<string, unknown> | null {
  let value: unknown
  try {
    value = JSON.parse(message)
  } catch {
    return null
  }
  return typeof value === 'object' && value !== null ? value as Record<string, unknown> : null
}

import { parseIP } from '../security/ip-address'
import { ConfigError } from './config-error'
import type { ProxyServerConfig } from './config'

const V4_MAPPED_PREFIX = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]

/**
 * True when `host` only accepts connections from this machine: `localhost`, `127.0.0.0/8`,
 * `::1`, or `::ffff:127.0.0.0/104`. Any other name may resolve to anything, and IPv6 forms that
 * merely carry an IPv4 address (NAT64, 6to4, IPv4-compatible) are addresses of other hosts.
 */
export function isLoopbackHost (host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true
  const bytes = parseIP(host)
  if (bytes === null) return false
  if (bytes.length === 4) return bytes[0] === 127
  if (V4_MAPPED_PREFIX.every((value, index) => bytes[index] === value)) return bytes[12] === 127
  return bytes.every((value, index) => value === (index === 15 ? 1 : 0))
}

/**
 * Refuses an open proxy: a listener on a non-loopback address while no `users` are configured,
 * unless the file says `"allowAnonymous": true`. Run on the final configuration (after
 * `--host`), before anything listens.
 * @throws ConfigError naming the listener, `users` and `allowAnonymous`.
 */
export function checkListenerExposure (config: ProxyServerConfig): void {
  if (config.allowAnonymous === true) return
  if (config.users !== undefined && Object.keys(config.users).length > 0) return
  config.listen.forEach((listener, index) => {
    if (isLoopbackHost(listener.host)) return
    throw new ConfigError(`/listen/${index}/host: "${listener.host}" is not a loopback address and no "users" are configured, so anyone who can reach it could use the proxy. Add "users" (proxy authentication), listen on 127.0.0.1, or set "allowAnonymous": true to accept this deliberately`)
  })
}

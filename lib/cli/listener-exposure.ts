import { classifyAddress } from '../security/special-purpose-ranges'
import { isIP } from 'node:net'
import { ConfigError } from './config-error'
import type { ProxyServerConfig } from './config'

/**
 * True when `host` only accepts connections from this machine: `localhost`, or a loopback
 * address (`127.0.0.0/8`, `::1`, `::ffff:127.0.0.1`). Any other name may resolve to anything.
 */
export function isLoopbackHost (host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true
  return isIP(host) !== 0 && classifyAddress(host) === 'loopback'
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

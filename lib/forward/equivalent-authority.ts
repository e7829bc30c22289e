import type { ForwardProxyDestination } from '../../types/destination'
import { canonicalHost } from '../security/canonical-host'

const AUTHORITY = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]]+)(?::([0-9]{1,5}))?$/

/**
 * True when a `Host` value names `destination`: same canonical host (case, IDNA and IPv4
 * spellings normalized) and same port, an omitted port meaning `defaultPort`.
 */
export function isEquivalentAuthority (hostHeader: string, destination: ForwardProxyDestination, defaultPort: number): boolean {
  const match = AUTHORITY.exec(hostHeader.trim())
  if (match === null) return false
  const [, rawHost = '', rawPort] = match
  const port = rawPort === undefined ? defaultPort : Number(rawPort)
  return port === destination.port && canonicalHost(rawHost) === destination.host
}

import type { ForwardProxyDestination } from '../../types/destination'
import { canonicalHost } from '../security/canonical-host'

/**
 * Parses an authority-form CONNECT target (`host:port`, `[v6]:port`). The port is required
 * (1 to 65535, digits only). Userinfo, schemes, paths, percent-encoding and non-ASCII are
 * refused. Returns null when the target is not acceptable.
 */
export function parseConnectTarget (target: string): ForwardProxyDestination | null {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~-]+):([0-9]{1,5})$/.exec(target)
  if (match === null) return null
  const [, rawHost = '', rawPort = ''] = match
  const port = Number(rawPort)
  if (port < 1 || port > 65535) return null
  const host = canonicalHost(rawHost)
  if (host === null) return null
  return { host, port }
}

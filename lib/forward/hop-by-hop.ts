/** Hop-by-hop header names (RFC 9110 section 7.6.1), plus the non-standard ones proxies must drop too. */
const HOP_BY_HOP = new Set([
  'connection', 'proxy-connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade',
  'proxy-authenticate', 'proxy-authorization', 'http2-settings'
])

/**
 * Names of the headers a message says are hop-by-hop: the fixed list plus every token of every
 * `Connection` (and `Proxy-Connection`) header exactly as received, lower-cased.
 */
export function hopByHopNames (rawHeaders: readonly string[]): Set<string> {
  const names = new Set(HOP_BY_HOP)
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]?.toLowerCase()
    if (name !== 'connection' && name !== 'proxy-connection') continue
    for (const token of (rawHeaders[i + 1] ?? '').split(',')) {
      const listed = token.trim().toLowerCase()
      if (listed !== '') names.add(listed)
    }
  }
  return names
}

/** The `Connection`-listed names of an already-parsed header object (an upstream response). */
export function hopByHopNamesOfObject (headers: Readonly<Record<string, string | string[] | undefined>>): Set<string> {
  const raw: string[] = []
  for (const name of ['connection', 'proxy-connection']) {
    const value = headers[name]
    if (value !== undefined) raw.push(name, Array.isArray(value) ? value.join(',') : value)
  }
  return hopByHopNames(raw)
}

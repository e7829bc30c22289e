/** Hop-by-hop header names (RFC 9110 section 7.6.1), plus the non-standard ones proxies must drop too. */
const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection', 'proxy-connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade',
  'proxy-authenticate', 'proxy-authorization', 'http2-settings'
])

/** A set of lower-cased header names, as far as checking a name needs. */
export interface HeaderNames {
  has: (name: string) => boolean
}

/**
 * Names of the headers a message says are hop-by-hop: the fixed list plus every token of every
 * `Connection` (and `Proxy-Connection`) header exactly as received, lower-cased. A message
 * without those headers gets the fixed list itself (nothing copied per request).
 */
export function hopByHopNames (rawHeaders: readonly string[]): HeaderNames {
  let listed: Set<string> | undefined
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]?.toLowerCase()
    if (name !== 'connection' && name !== 'proxy-connection') continue
    for (const token of (rawHeaders[i + 1] ?? '').split(',')) {
      const listedName = token.trim().toLowerCase()
      if (listedName !== '') (listed ??= new Set()).add(listedName)
    }
  }
  if (listed === undefined) return HOP_BY_HOP
  const names = listed
  return { has: (name) => HOP_BY_HOP.has(name) || names.has(name) }
}

/** The `Connection`-listed names of an already-parsed header object (an upstream response). */
export function hopByHopNamesOfObject (headers: Readonly<Record<string, string | string[] | undefined>>): HeaderNames {
  const raw: string[] = []
  for (const name of ['connection', 'proxy-connection']) {
    const value = headers[name]
    if (value !== undefined) raw.push(name, Array.isArray(value) ? value.join(',') : value)
  }
  return hopByHopNames(raw)
}

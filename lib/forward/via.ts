/** The `Via` entry this proxy adds for a message received over `httpVersion` (e.g. `1.1 fastify-forward-proxy`). */
export function viaEntry (httpVersion: string, pseudonym: string): string {
  const protocol = httpVersion === '1.0' ? '1.0' : httpVersion.startsWith('2') ? '2' : '1.1'
  return `${protocol} ${pseudonym}`
}

/**
 * True when a `Via` value already lists this proxy's pseudonym: the request has looped
 * back to us. Chained proxies must therefore use distinct pseudonyms.
 */
export function viaListsPseudonym (via: string | string[] | undefined, pseudonym: string): boolean {
  if (via === undefined) return false
  const wanted = pseudonym.toLowerCase()
  const values = Array.isArray(via) ? via : [via]
  return values.some((value) => value.split(',').some((entry) => {
    const received = entry.trim().split(/\s+/)[1]
    return received !== undefined && received.toLowerCase() === wanted
  }))
}

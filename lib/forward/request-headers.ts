import { hopByHopNames } from './hop-by-hop'

/** What the outgoing request head needs beyond the client's headers. */
export interface OutgoingHeaderSettings {
  /** `Host` value: the target's authority. */
  readonly host: string
  /** This proxy's `Via` entry. */
  readonly via: string
  /**
   * The Max-Forwards value to send (already decremented), undefined for none, or `'as-received'`
   * to pass the client's header through untouched (requests inside intercepted tunnels, SPEC 4.4.4).
   */
  readonly maxForwards: string | undefined | 'as-received'
}

// Replaced by the proxy (host, max-forwards) or handled by it (expect: Node answers 100-continue).
const REPLACED = new Set(['host', 'max-forwards', 'expect'])

/**
 * Builds the outgoing header list (flat name/value pairs, names as received, order kept) from
 * the client's raw headers: hop-by-hop headers and every name listed in `Connection` removed
 * first, `Proxy-Authorization` never kept, then `Host` from the target, `Max-Forwards` and our
 * `Via` added, so nothing the client lists in `Connection` can strip what the proxy adds.
 * HTTP/2 pseudo-headers are dropped and HTTP/2's separate `cookie` fields joined into one
 * (RFC 9113 section 8.2.3), since requests always leave over HTTP/1.1.
 */
export function buildOutgoingRequestHeaders (rawHeaders: readonly string[], settings: OutgoingHeaderSettings): string[] {
  const dropped = hopByHopNames(rawHeaders)
  const keepMaxForwards = settings.maxForwards === 'as-received'
  const outgoing: string[] = ['host', settings.host]
  let cookieIndex = -1
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string
    const lower = name.toLowerCase()
    if (lower.startsWith(':') || dropped.has(lower)) continue
    if (REPLACED.has(lower) && !(keepMaxForwards && lower === 'max-forwards')) continue
    const value = rawHeaders[i + 1] as string
    if (lower === 'cookie' && cookieIndex !== -1) {
      outgoing[cookieIndex] = `${outgoing[cookieIndex] as string}; ${value}`
      continue
    }
    if (lower === 'cookie') cookieIndex = outgoing.length + 1
    outgoing.push(name, value)
  }
  if (settings.maxForwards !== undefined && !keepMaxForwards) outgoing.push('max-forwards', settings.maxForwards)
  outgoing.push('via', settings.via)
  return outgoing
}

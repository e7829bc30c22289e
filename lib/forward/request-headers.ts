import { hopByHopNames } from './hop-by-hop'

/** What the outgoing request head needs beyond the client's headers. */
export interface OutgoingHeaderSettings {
  /** `Host` value: the target's authority. */
  readonly host: string
  /** This proxy's `Via` entry. */
  readonly via: string
  /** The Max-Forwards value to send (already decremented), or undefined for none. */
  readonly maxForwards: string | undefined
}

// Replaced by the proxy (host, max-forwards) or handled by it (expect: Node answers 100-continue).
const REPLACED = new Set(['host', 'max-forwards', 'expect'])

/**
 * Builds the outgoing header list (flat name/value pairs, names as received, order kept) from
 * the client's raw headers: hop-by-hop headers and every name listed in `Connection` removed
 * first, `Proxy-Authorization` never kept, then `Host` from the target, `Max-Forwards` and our
 * `Via` added, so nothing the client lists in `Connection` can strip what the proxy adds.
 */
export function buildOutgoingRequestHeaders (rawHeaders: readonly string[], settings: OutgoingHeaderSettings): string[] {
  const dropped = hopByHopNames(rawHeaders)
  const outgoing: string[] = ['host', settings.host]
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string
    const lower = name.toLowerCase()
    if (dropped.has(lower) || REPLACED.has(lower)) continue
    outgoing.push(name, rawHeaders[i + 1] as string)
  }
  if (settings.maxForwards !== undefined) outgoing.push('max-forwards', settings.maxForwards)
  outgoing.push('via', settings.via)
  return outgoing
}

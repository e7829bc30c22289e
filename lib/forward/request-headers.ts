import { hopByHopNames } from './hop-by-hop'
import { NO_HOOK_EDITS, type HookHeaderEdits } from './hook-header-edits'

/** What the outgoing request head needs beyond the client's headers. */
export interface OutgoingHeaderSettings {
  /** `Host` value: the target's authority. */
  readonly host: string
  /** This proxy's `Via` entry. */
  readonly via: string
  /**
   * The Max-Forwards value to send (already decremented), undefined for none, or `'as-received'`
   * to pass the client's header through untouched (requests inside intercepted tunnels).
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
 *
 * The application hooks' `edits` apply on top: a removed name is left out, a
 * replaced one is sent with the hook's value where it first appeared (the received name's
 * case kept), an added one after the received headers. The same removal rules apply to them,
 * so a hook cannot add a hop-by-hop or `Connection`-listed header either.
 */
export function buildOutgoingRequestHeaders (rawHeaders: readonly string[], settings: OutgoingHeaderSettings, edits: HookHeaderEdits = NO_HOOK_EDITS): string[] {
  const dropped = hopByHopNames(rawHeaders)
  const keepMaxForwards = settings.maxForwards === 'as-received'
  const sent = (lower: string): boolean =>
    !lower.startsWith(':') && !dropped.has(lower) && !(REPLACED.has(lower) && !(keepMaxForwards && lower === 'max-forwards'))
  const outgoing: string[] = ['host', settings.host]
  const replaced = new Set<string>()
  let cookieIndex = -1
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string
    const lower = name.toLowerCase()
    if (!sent(lower) || edits.removed.has(lower) || replaced.has(lower)) continue
    const replacement = edits.changed.get(lower)
    if (replacement !== undefined) {
      replaced.add(lower)
      for (const value of replacement) outgoing.push(name, value)
      continue
    }
    const value = rawHeaders[i + 1] as string
    if (lower === 'cookie' && cookieIndex !== -1) {
      outgoing[cookieIndex] = `${outgoing[cookieIndex] as string}; ${value}`
      continue
    }
    if (lower === 'cookie') cookieIndex = outgoing.length + 1
    outgoing.push(name, value)
  }
  for (const [name, values] of edits.changed) {
    if (replaced.has(name) || !sent(name)) continue
    for (const value of values) outgoing.push(name, value)
  }
  if (settings.maxForwards !== undefined && !keepMaxForwards) outgoing.push('max-forwards', settings.maxForwards)
  outgoing.push('via', settings.via)
  return outgoing
}

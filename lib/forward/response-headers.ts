import { hopByHopNamesOfObject } from './hop-by-hop'

/** A response head's headers as undici returns them. */
export type IncomingHeaders = Readonly<Record<string, string | string[] | undefined>>

/**
 * Builds the headers sent to the client from a destination's response: hop-by-hop and
 * `Connection`-listed headers removed (Node frames the body itself), then our `Via` appended.
 */
export function buildClientResponseHeaders (headers: IncomingHeaders, via: string): Record<string, string | string[]> {
  const dropped = hopByHopNamesOfObject(headers)
  const outgoing: Record<string, string | string[]> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || dropped.has(name)) continue
    outgoing[name] = value
  }
  const existingVia = outgoing.via
  outgoing.via = existingVia === undefined ? via : [...(Array.isArray(existingVia) ? existingVia : [existingVia]), via]
  return outgoing
}

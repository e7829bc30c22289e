// The response head the client gets from a destination's: hop-by-hop and Connection-listed
// fields removed, this proxy's Via added.

import { hopByHopNamesOfObject } from './outgoing-head'

/** A response head's headers as undici returns them. */
export type IncomingHeaders = Readonly<Record<string, string | string[] | undefined>>

/** Where {@link copyClientResponseHeaders} puts each header: a Fastify reply, or an object being built. */
export interface ResponseHeaderSink {
  header: (name: string, value: string | string[]) => unknown
}

/**
 * Puts the headers sent to the client from a destination's response into `sink`, in the
 * destination's order: hop-by-hop and `Connection`-listed headers removed (Node frames the body
 * itself), our `Via` added after the destination's own (where its `Via` was, else last). Given
 * the reply itself, the head reaches it without an object built in between: on the usual
 * forwarded response that copy, key by key, cost about a microsecond.
 */
export function copyClientResponseHeaders (headers: IncomingHeaders, via: string, sink: ResponseHeaderSink): void {
  const dropped = hopByHopNamesOfObject(headers)
  let viaSet = false
  for (const name of Object.keys(headers)) {
    const value = headers[name]
    if (value === undefined || dropped.has(name)) continue
    if (name === 'via') {
      sink.header(name, [...(Array.isArray(value) ? value : [value]), via])
      viaSet = true
      continue
    }
    sink.header(name, value)
  }
  if (!viaSet) sink.header('via', via)
}

/** The headers of {@link copyClientResponseHeaders} as an object, for a head that is edited before it is sent. */
export function buildClientResponseHeaders (headers: IncomingHeaders, via: string): Record<string, string | string[]> {
  const outgoing: Record<string, string | string[]> = {}
  copyClientResponseHeaders(headers, via, { header: (name, value) => { outgoing[name] = value } })
  return outgoing
}

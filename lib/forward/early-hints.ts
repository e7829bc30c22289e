// A destination's 103 (Early Hints) passed on to the client, as a proxy must pass on 1xx
// responses (RFC 9110 section 15.2).

import type { FastifyReply } from 'fastify'
import type { SecretScrubber } from '../security/secret-scrubber'
import { buildClientResponseHeaders, type IncomingHeaders } from './client-response-head'
import { scrubHeaders } from './scrubbed-response'

/** Hears a destination's 103 heads, ahead of its final response. */
export interface EarlyHintsListener {
  earlyHints: (headers: IncomingHeaders) => void
}

/**
 * Writes a destination's 103 to the client, its hop-by-hop fields removed, our Via added and,
 * toward a destination with a scrubber, its secret values replaced (into `found`). Not to an
 * HTTP/1.0 client (which knows no 1xx), once the final head is out, nor when Node refuses it
 * (a 103 without a valid `Link`, which is all Early Hints are for).
 */
export function relayEarlyHints (reply: FastifyReply, headers: IncomingHeaders, via: string, scrubber: SecretScrubber | null, found: Set<string>): void {
  const { raw } = reply
  const { httpVersionMajor, httpVersionMinor } = reply.request.raw
  if (raw.headersSent || raw.destroyed || (httpVersionMajor === 1 && httpVersionMinor === 0)) return
  const hints = buildClientResponseHeaders(headers, via)
  if (scrubber !== null) scrubHeaders(hints, scrubber, found)
  try {
    raw.writeEarlyHints(hints)
  } catch {
    // Node validates the Link value; a 103 it refuses is dropped, as a client would ignore it.
  }
}

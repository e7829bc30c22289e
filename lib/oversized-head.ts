// The refusal of an HTTP/1.1 proxy request whose head is too large to forward faithfully.

import type { IncomingMessage } from 'node:http'
import { requestTargetAsReceived, type RawRequest } from './core/proxy-request'
import { ProxyError } from './protocol/errors'

/** Longest request target (the URL or CONNECT authority) forwarded: RFC 9112 section 3's 8,000 octets, rounded up. */
const MAX_REQUEST_TARGET_LENGTH = 8192

// Node's default `server.maxHeadersCount`.
const NODE_MAX_HEADERS_COUNT = 2000

/**
 * The refusal of an HTTP/1.1 proxy request whose head is too large to handle faithfully, before
 * it is authenticated or forwarded, or null:
 * - a request target over {@link MAX_REQUEST_TARGET_LENGTH}: 414 `http_request_error`;
 * - a header count that reached the server's `maxHeadersCount` (by default 1,000 lines): 431
 *   `http_request_error`. Node 20 silently drops the lines past it while its parser still frames
 *   the message by them, so a `Transfer-Encoding` or `Content-Length` past the limit would
 *   frame a body the proxy never sees. (Recent Node 22 and 24 releases refuse such a head in
 *   the parser, `HPE_HEADER_OVERFLOW`, and it never gets here.)
 */
export function oversizedHeadError (raw: RawRequest): ProxyError | null {
  if (raw.httpVersionMajor !== 1) return null
  if (requestTargetAsReceived(raw).length > MAX_REQUEST_TARGET_LENGTH) {
    return new ProxyError('http_request_error', 'The request target is too long.', { status: 414, details: 'request target too long' })
  }
  const limit = maxHeadersCountOf(raw as IncomingMessage)
  // Node applies the limit to `rawHeaders` entries (names and values), in batches of 32 lines.
  if (limit > 0 && raw.rawHeaders.length >= limit) {
    return new ProxyError('http_request_error', 'The request has too many header fields.', { status: 431, details: 'too many header fields' })
  }
  return null
}

function maxHeadersCountOf (raw: IncomingMessage): number {
  const server = (raw.socket as { server?: { maxHeadersCount?: number | null } } | null)?.server
  const configured = server?.maxHeadersCount
  return typeof configured === 'number' ? configured : NODE_MAX_HEADERS_COUNT
}

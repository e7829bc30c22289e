import type { IncomingMessage } from 'node:http'
import type { FastifyRequest } from 'fastify'
import { ProxyError } from '../diagnostics/proxy-error'

/** Longest request target (the URL or CONNECT authority) forwarded: RFC 9112 section 3's 8,000 octets, rounded up. */
export const MAX_REQUEST_TARGET_LENGTH = 8192

// Node's default `server.maxHeadersCount`.
const NODE_MAX_HEADERS_COUNT = 2000

/**
 * Refuses an HTTP/1.1 proxy request whose head is too large to handle faithfully, before it is
 * authenticated or forwarded:
 * - a request target over {@link MAX_REQUEST_TARGET_LENGTH}: 414 `http_request_error`;
 * - a header count that reached the server's `maxHeadersCount` (by default 1,000 lines): 431
 *   `http_request_error`. Node silently drops the lines past it while its parser still frames
 *   the message by them, so a `Transfer-Encoding` or `Content-Length` past the limit would
 *   frame a body the proxy never sees.
 */
export async function refuseOversizedHead (request: FastifyRequest): Promise<void> {
  const raw = request.raw
  if (raw.httpVersionMajor !== 1) return
  if ((raw.url ?? '').length > MAX_REQUEST_TARGET_LENGTH) {
    throw new ProxyError('http_request_error', 'The request target is too long.', { status: 414, details: 'request target too long' })
  }
  const limit = maxHeadersCountOf(raw)
  // Node applies the limit to `rawHeaders` entries (names and values), in batches of 32 lines.
  if (limit > 0 && raw.rawHeaders.length >= limit) {
    throw new ProxyError('http_request_error', 'The request has too many header fields.', { status: 431, details: 'too many header fields' })
  }
}

function maxHeadersCountOf (raw: IncomingMessage): number {
  const server = (raw.socket as { server?: { maxHeadersCount?: number | null } } | null)?.server
  const configured = server?.maxHeadersCount
  return typeof configured === 'number' ? configured : NODE_MAX_HEADERS_COUNT
}

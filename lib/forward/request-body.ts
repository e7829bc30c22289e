import type { FastifyRequest } from 'fastify'
import { Http2ServerRequest } from 'node:http2'
import type { ReceivedHeaders } from './received-headers'

/**
 * True when the client's request carries a body: HTTP/1.1 framing (RFC 9112 section 6.3), or,
 * over HTTP/2, a HEADERS frame without END_STREAM (a body needs no Content-Length there).
 * Judged on the headers as received: what hooks did to `request.headers` cannot change framing.
 */
export function hasBody (request: FastifyRequest, headers: ReceivedHeaders): boolean {
  const raw: unknown = request.raw
  if (raw instanceof Http2ServerRequest) return !raw.stream.endAfterHeaders
  if (headers['transfer-encoding'] !== undefined) return true
  const length = headers['content-length']
  return length !== undefined && length !== '0'
}

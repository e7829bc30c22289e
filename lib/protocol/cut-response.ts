// Ending a response whose head is out when its body cannot be finished.

import { constants, type Http2ServerResponse } from 'node:http2'
import type { ServerResponse } from 'node:http'

/**
 * Ends a response whose head is already out as cut, the only signal left to the client: over
 * HTTP/1.1 the connection closes before the body's length or last chunk; over HTTP/2 the stream
 * is reset with INTERNAL_ERROR. Node's own destroy resets an open stream with NO_ERROR, which
 * clients (Node's, curl) read as a complete body.
 */
export function cutResponse (response: ServerResponse | Http2ServerResponse): void {
  const { stream } = response as Partial<Http2ServerResponse>
  if (stream === undefined) response.destroy()
  else if (!stream.closed) stream.close(constants.NGHTTP2_INTERNAL_ERROR)
}

/** True when `response` answers an HTTP/2 stream (Node's compatibility API). */
export function isHttp2Response (response: ServerResponse | Http2ServerResponse): response is Http2ServerResponse {
  return (response as Partial<Http2ServerResponse>).stream !== undefined
}

// Ending a response whose head is out when its body cannot be finished, and resetting an HTTP/2
// stream so that its client reads the reset, never a clean end.

import { constants, type Http2ServerResponse, type ServerHttp2Stream } from 'node:http2'
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
  else resetStream(stream, constants.NGHTTP2_INTERNAL_ERROR)
}

/** True when `response` answers an HTTP/2 stream (Node's compatibility API). */
export function isHttp2Response (response: ServerResponse | Http2ServerResponse): response is Http2ServerResponse {
  return (response as Partial<Http2ServerResponse>).stream !== undefined
}

/**
 * True when the client reset the HTTP/2 stream of `response` before its end. Node's
 * compatibility API then emits 'finish' as for a complete response (and reports
 * `writableFinished`), so this is the only sign that the client left.
 */
export function resetByClient (response: ServerResponse | Http2ServerResponse): boolean {
  return (response as Partial<Http2ServerResponse>).stream?.aborted === true
}

/**
 * Resets `stream` with `code` and no END_STREAM before it. Node's `close(code)` on a stream
 * whose writable side is open first ends that side, and with no write in flight that END_STREAM
 * goes out ahead of the RST_STREAM: the client would read a clean end of the tunnel (a cut
 * download that looks complete), and a client that had already half-closed would see the stream
 * closed with no error at all. While a write is in flight Node resets without ending first, so
 * an empty write (no payload) goes before the close.
 */
export function resetStream (stream: ServerHttp2Stream, code: number): void {
  if (stream.closed) return
  if (!stream.writableEnded) stream.write(Buffer.alloc(0))
  stream.close(code)
}

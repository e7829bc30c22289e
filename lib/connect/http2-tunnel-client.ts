import { constants, type Http2ServerRequest, type ServerHttp2Stream } from 'node:http2'
import type { Socket } from 'node:net'
import type { TunnelClient } from './tunnel-client'
import { relayTunnel, type TunnelRelayOptions } from './tunnel-relay'

/**
 * An HTTP/2 CONNECT: one stream of the session becomes the tunnel,
 * other streams go on. Bytes from the client are read through Node's compatibility request,
 * which already consumes the stream and pauses it when unread (so HTTP/2 flow control holds
 * a fast client back); bytes to the client are written on the stream, whose writes wait for
 * the client's flow-control window. A destination failure resets the stream with
 * CONNECT_ERROR; a client that resets the stream gets the destination closed with a TCP RST.
 */
export function http2TunnelClient (request: Http2ServerRequest): TunnelClient {
  const { stream } = request
  return {
    http2: true,
    get gone () { return stream.destroyed || stream.closed },
    closable: stream,
    onGone (listener) {
      stream.once('close', listener)
      return () => stream.removeListener('close', listener)
    },
    establish (upstream: Socket, relay: TunnelRelayOptions) {
      stream.setTimeout(0)
      stream.respond({ ':status': 200 })
      relayTunnel({ input: request, output: stream }, upstream, {
        ...relay,
        abortClient: () => resetStream(stream, constants.NGHTTP2_CONNECT_ERROR)
      })
    },
    intercept () {
      stream.setTimeout(0)
      stream.respond({ ':status': 200 })
      return { kind: 'stream', input: request, output: stream, abort: () => resetStream(stream, constants.NGHTTP2_CONNECT_ERROR) }
    }
  }
}

/**
 * Resets `stream` with `code` and no END_STREAM before it. Node's `close(code)` on a stream
 * whose writable side is open first ends that side, and with no write in flight that END_STREAM
 * goes out ahead of the RST_STREAM: the client would read a clean end of the tunnel (a cut
 * download that looks complete), and a client that had already half-closed would see the stream
 * closed with no error at all. While a write is in flight Node resets without ending first, so
 * an empty write (no payload) goes before the close.
 */
function resetStream (stream: ServerHttp2Stream, code: number): void {
  if (stream.closed) return
  if (!stream.writableEnded) stream.write(Buffer.alloc(0))
  stream.close(code)
}

import type { EventEmitter } from 'node:events'
import { constants, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2'

/** The window over which a connection's early stream resets are counted. */
export const STREAM_RESET_WINDOW_MS = 10_000

const TOO_MANY_RESETS = 'fastify-forward-proxy: too many streams reset before their answer'

/**
 * Closes an HTTP/2 client connection that resets more than `maxResets` streams before the proxy
 * answered them within {@link STREAM_RESET_WINDOW_MS}, with GOAWAY `ENHANCE_YOUR_CALM` (the
 * "rapid reset" attack: every stream costs authentication, routing and policy work that the
 * client never waits for, and the stream limit never fills because each stream is gone at
 * once). A stream reset after its response head was sent is a client changing its mind, not
 * counted. `server` is any server that emits `'session'`; others are left alone.
 */
export function limitEarlyStreamResets (server: EventEmitter, maxResets: number): void {
  server.on('session', (session: ServerHttp2Session) => {
    let windowStart = 0
    let resets = 0
    let closing = false
    const onStreamClosed = (stream: ServerHttp2Stream): void => {
      if (stream.headersSent || stream.rstCode === constants.NGHTTP2_NO_ERROR || closing) return
      const now = Date.now()
      if (now - windowStart > STREAM_RESET_WINDOW_MS) {
        windowStart = now
        resets = 0
      }
      resets++
      if (resets <= maxResets) return
      closing = true
      // Not from inside this callback: while nghttp2 is still reading the frames of the same
      // chunk, the GOAWAY would not be written and the socket would stay open. The code goes
      // with an error (Node's server listens for session errors): without one it becomes NO_ERROR.
      setImmediate(() => {
        if (!session.destroyed) session.destroy(new Error(TOO_MANY_RESETS), constants.NGHTTP2_ENHANCE_YOUR_CALM)
      })
    }
    session.on('stream', (stream: ServerHttp2Stream) => {
      // HEADERS and RST_STREAM read in one chunk: the stream may be closed before this event.
      if (stream.closed) onStreamClosed(stream)
      else stream.once('close', () => onStreamClosed(stream))
    })
  })
}

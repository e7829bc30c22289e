import { Transform, type Readable } from 'node:stream'
import { ProxyError } from '../diagnostics/proxy-error'

/**
 * Passes `body` through, failing it with a read-timeout ProxyError when no bytes arrive for
 * `idleTimeout`; the timer restarts on every chunk, so a slow but live stream is never cut.
 * `onBytes` hears the size of every chunk passed on (for the access log).
 * (A 'data' listener on `body` itself would start it flowing before the reply pipes it.)
 * Wired by hand rather than with `stream.pipeline`, which costs an AbortController and a
 * DOMException per response on the forwarding path: an error on `body` fails the relay, and
 * the relay closing (ended, timed out, or destroyed because the client left) destroys `body`.
 */
export function withInactivityTimeout (body: Readable, idleTimeout: number, onBytes?: (bytes: number) => void): Readable {
  const relay = new Transform({
    transform (chunk: Buffer, _encoding, callback) {
      timer.refresh()
      onBytes?.(chunk.length)
      callback(null, chunk)
    }
  })
  const timer = setTimeout(() => {
    relay.destroy(new ProxyError('connection_read_timeout', 'The destination stopped sending its response.'))
  }, idleTimeout)
  timer.unref()
  body.on('error', (error) => relay.destroy(error))
  relay.once('close', () => {
    clearTimeout(timer)
    if (!body.destroyed) body.destroy()
  })
  body.pipe(relay)
  return relay
}

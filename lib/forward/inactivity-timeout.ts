import type { Readable } from 'node:stream'
import { ProxyError } from '../diagnostics/proxy-error'

/**
 * Arms `body` (a destination's response body, about to be sent as the reply) with an
 * inactivity timer: when no bytes arrive for `idleTimeout` it is destroyed with a read-timeout
 * ProxyError; the timer restarts on every chunk, so a slow but live stream is never cut.
 * `onBytes` hears the size of every chunk (for the access log). Returns `body` itself: no
 * stream is layered on it (a Transform per response cost measurable CPU on the forwarding
 * path). The body is paused before the listener is added, so nothing flows until the reply
 * pipes it; the reply destroys it when the client leaves.
 */
export function withInactivityTimeout (body: Readable, idleTimeout: number, onBytes?: (bytes: number) => void): Readable {
  const timer = setTimeout(() => {
    body.destroy(new ProxyError('connection_read_timeout', 'The destination stopped sending its response.'))
  }, idleTimeout)
  timer.unref()
  body.pause()
  body.on('data', (chunk: Buffer) => {
    timer.refresh()
    onBytes?.(chunk.length)
  })
  // The reply reports the error once it pipes the body; until then nothing else listens.
  body.on('error', () => {})
  body.once('close', () => clearTimeout(timer))
  return body
}

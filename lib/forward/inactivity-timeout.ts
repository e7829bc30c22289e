import { Transform, pipeline, type Readable } from 'node:stream'
import { ProxyError } from '../diagnostics/proxy-error'

/**
 * Passes `body` through, failing it with a read-timeout ProxyError when no bytes arrive for
 * `idleTimeout`; the timer restarts on every chunk, so a slow but live stream is never cut.
 * (A 'data' listener on `body` itself would start it flowing before the reply pipes it.)
 */
export function withInactivityTimeout (body: Readable, idleTimeout: number): Readable {
  const timer = setTimeout(() => {
    relay.destroy(new ProxyError('connection_read_timeout', 'The destination stopped sending its response.'))
  }, idleTimeout)
  timer.unref()
  const relay = new Transform({
    transform (chunk: Buffer, _encoding, callback) {
      timer.refresh()
      callback(null, chunk)
    }
  })
  pipeline(body, relay, () => clearTimeout(timer))
  return relay
}

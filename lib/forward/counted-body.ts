import { Transform, type Readable } from 'node:stream'
import { ProxyError } from '../diagnostics/proxy-error'

/**
 * Passes a request body through unchanged, telling `onBytes` the size of each chunk (the
 * access log's bytes from the client). A 'data' listener on the client's request itself
 * would start it flowing before undici reads it, losing the first chunks. Wired by hand
 * rather than with `stream.pipeline` (an AbortController per request): an error on `body`
 * fails the copy undici reads, and the copy closing early (undici gave up) destroys `body`.
 * A body that moves no byte for `idleTimeout` milliseconds fails the copy, which aborts the
 * request to the destination: 408 `http_request_error` when the client stopped sending, 504
 * `http_response_timeout` when the destination stopped reading. Neither side can hold the other's
 * connection for longer than that.
 */
export function countedBody (body: Readable, onBytes: (bytes: number) => void, idleTimeout: number): Readable {
  const counter = new Transform({
    transform (chunk: Buffer, _encoding, callback) {
      idle.refresh()
      onBytes(chunk.length)
      callback(null, chunk)
    }
  })
  let stalled = false
  const idle = setTimeout(() => {
    // Bytes waiting in the copy mean the destination stopped reading, not the client sending.
    const destinationStalled = counter.readableLength > 0 || counter.writableLength > 0
    // A client that stalled keeps its connection until the 408 is written (then it closes).
    stalled = !destinationStalled
    counter.destroy(destinationStalled
      ? new ProxyError('http_response_timeout', 'The destination stopped reading the request body.', { details: 'request body not read' })
      : new ProxyError('http_request_error', 'The client stopped sending its request body.', { status: 408, details: 'request body stalled' }))
  }, idleTimeout)
  idle.unref()
  body.on('error', (error) => counter.destroy(error))
  body.once('end', () => clearTimeout(idle))
  counter.once('close', () => {
    clearTimeout(idle)
    if (stalled) body.unpipe(counter)
    else if (!body.destroyed && !body.readableEnded) body.destroy()
  })
  body.pipe(counter)
  return counter
}

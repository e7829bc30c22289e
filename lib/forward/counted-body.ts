import { Transform, type Readable } from 'node:stream'

/**
 * Passes a request body through unchanged, telling `onBytes` the size of each chunk (the
 * access log's bytes from the client). A 'data' listener on the client's request itself
 * would start it flowing before undici reads it, losing the first chunks. Wired by hand
 * rather than with `stream.pipeline` (an AbortController per request): an error on `body`
 * fails the copy undici reads, and the copy closing early (undici gave up) destroys `body`.
 */
export function countedBody (body: Readable, onBytes: (bytes: number) => void): Readable {
  const counter = new Transform({
    transform (chunk: Buffer, _encoding, callback) {
      onBytes(chunk.length)
      callback(null, chunk)
    }
  })
  body.on('error', (error) => counter.destroy(error))
  counter.once('close', () => { if (!body.destroyed && !body.readableEnded) body.destroy() })
  body.pipe(counter)
  return counter
}

// The bodies a forwarded request moves: the client's request body counted as it flows to the
// destination with an inactivity timer, and the destination's response body with one too.

import type { FastifyRequest } from 'fastify'
import { Transform, type Readable } from 'node:stream'
import { Http2ServerRequest } from 'node:http2'
import { ProxyError } from '../protocol/errors'
import type { CaptureRecord } from '../capture/capture-record'
import type { ReceivedHeaders } from './outgoing-head'
import { headerTokens } from '../protocol/header-tokens'

/** Lets a body the client will not get go: a stream is read to its end (the connection stays reusable). */
export function discardBody (body: Buffer | Readable): void {
  if (Buffer.isBuffer(body)) return
  body.on('error', () => {})
  body.resume()
}

/** Gives a response body up unread: a stream is destroyed, which closes its destination connection. */
export function abandonBody (body: Buffer | Readable): void {
  if (Buffer.isBuffer(body)) return
  body.on('error', () => {})
  body.destroy()
}

/**
 * Passes a request body through unchanged, telling `onChunk` of each chunk (the access log's
 * bytes from the client) and, when the request is recorded, `capture` (its first bytes, and when
 * the body ended). A 'data' listener on the client's request itself
 * would start it flowing before undici reads it, losing the first chunks. Wired by hand
 * rather than with `stream.pipeline` (an AbortController per request): an error on `body`
 * fails the copy undici reads. When the copy closes before the body's end because undici stopped
 * reading it (the destination answered early, a 413 say, or failed), the rest of the body is
 * read and dropped, so that the answer reaches the client: destroying it would close the client's
 * connection (or HTTP/2 stream) under that answer.
 * A body that moves no byte for `idleTimeout` milliseconds fails the copy, which aborts the
 * request to the destination: 408 `http_request_error` when the client stopped sending, 504
 * `http_response_timeout` when the destination stopped reading. Neither side can hold the other's
 * connection for longer than that; a client that stops sending the rest it no longer needs to
 * send loses its connection after the same time.
 */
export function countedBody (body: Readable, onChunk: (chunk: Buffer) => void, idleTimeout: number, capture: CaptureRecord | undefined): Readable {
  const tap = capture?.tapRequestBody()
  const counter = new Transform({
    transform (chunk: Buffer, _encoding, callback) {
      idle.refresh()
      onChunk(chunk)
      tap?.push(chunk)
      callback(null, chunk)
    }
  })
  let stalled = false
  let dropping = false
  const idle = setTimeout(() => {
    if (dropping) {
      body.destroy()
      return
    }
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
  body.once('end', () => {
    clearTimeout(idle)
    if (capture !== undefined && tap !== undefined) {
      tap.complete = true
      capture.requestSentAt = performance.now()
    }
  })
  counter.once('close', () => {
    if (stalled || body.destroyed || body.readableEnded) {
      clearTimeout(idle)
      if (stalled) body.unpipe(counter)
      return
    }
    body.unpipe(counter)
    dropping = true
    idle.refresh()
    body.on('data', () => idle.refresh())
    body.resume()
  })
  body.pipe(counter)
  return counter
}

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

/**
 * True when a destination's response head names a transfer coding other than `chunked`
 * (`Transfer-Encoding: gzip, chunked`, say). The proxy never offers one (it sends no `TE`
 * asking for it), and the parser undoes only `chunked`: the body would reach the client still
 * compressed, with nothing saying so, and unsearchable for a secret's value.
 */
export function hasUnreadableTransferCoding (headers: Readonly<Record<string, string | string[] | undefined>>): boolean {
  return headerTokens(headers['transfer-encoding']).some((coding) => coding !== 'chunked')
}

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

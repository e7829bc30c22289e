import type { Socket } from 'node:net'
import type { Duplex, Readable } from 'node:stream'
import type { TLSSocket, TLSSocketOptions } from 'node:tls'

/**
 * The client side of an HTTP/1.1 CONNECT chosen for interception, once the 200 is out: the
 * whole connection, on whose socket the TLS server side is layered directly.
 */
export interface InterceptedConnection {
  readonly kind: 'connection'
  readonly socket: Socket
  /** Bytes the client sent after its CONNECT head (an early ClientHello), read before the socket. */
  readonly head: Buffer
}

/**
 * The client side of an HTTP/2 CONNECT chosen for interception, once the 200 is out: one
 * stream, read through Node's compatibility request and written on the stream.
 */
export interface InterceptedStream {
  readonly kind: 'stream'
  /** Where the client's bytes are read from. */
  readonly input: Readable
  /** Where bytes for the client are written. */
  readonly output: Duplex
  /** Tears the stream down after a failure (reset with CONNECT_ERROR). */
  readonly abort: () => void
}

/** The client side of an intercepted tunnel, whatever carries it. */
export type InterceptedClient = InterceptedConnection | InterceptedStream

/** Byte counts of a finished intercepted tunnel, for logs and metrics. */
export interface TransportSummary {
  /** Bytes (TLS records) from the client. */
  readonly bytesUp: number
  /** Bytes (TLS records) to the client. */
  readonly bytesDown: number
  /** Why it ended. */
  readonly reason: 'closed' | 'idle-timeout' | 'aborted'
}

/**
 * What the client's TLS handshake runs on for an intercepted tunnel: it keeps the tunnel's
 * idle timer and byte counts, can refuse the handshake without TLS, and emits `'close'` once
 * when the client side is gone, however it ended.
 */
export interface ClientTransport {
  /** True once the client side is closed or being closed. */
  readonly destroyed: boolean
  /** Byte counts and why the tunnel ended (final once `'close'` has fired). */
  readonly summary: TransportSummary
  once: (event: 'close', listener: () => void) => this
  removeListener: (event: 'close', listener: () => void) => this
  /** Closes the client side (and the TLS socket layered on it). */
  destroy: () => void
  /** Fails the client's handshake with a plaintext handshake_failure alert, then closes. */
  refuseHandshake: () => void
  /** Layers the server side of TLS on the client side; call once, after the certificate is known. */
  startTls: (options: TLSSocketOptions) => TLSSocket
}

// The transports that carry an intercepted tunnel's client side while its TLS is terminated: an
// HTTP/1.1 CONNECT's socket or an HTTP/2 CONNECT's stream, each keeping the tunnel's idle timer,
// byte counts and close reason, and able to refuse the handshake in plaintext.

import type { Socket } from 'node:net'
import { TLSSocket, type TLSSocketOptions } from 'node:tls'
import { type Readable, type Writable, Duplex } from 'node:stream'
import { EventEmitter } from 'node:events'
import type {
  ClientTransport,
  InterceptedStream,
  TransportSummary,
  HandshakeCloseReason,
  InterceptedConnection
} from '../core/runtime'

// A fatal handshake_failure alert (TLS record type 21, version 3.3, level 2, description 40),
// valid in plaintext before any ServerHello.
const HANDSHAKE_FAILURE_ALERT = Buffer.from([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28])

// Longest time a refused handshake keeps draining the client's bytes after the alert.
const ALERT_LINGER_MS = 2000

/**
 * Fails a client's TLS handshake without TLS: sends a handshake_failure alert, ends the output,
 * and discards whatever the client still sends until it ends its side or two seconds have
 * passed (closing with unread bytes could reset the connection before the client reads the
 * alert); then calls `close`. Returns a function that cancels the wait, for a tunnel that
 * closes otherwise first.
 */
function refuseClientHandshake (input: Readable, output: Writable, close: () => void): () => void {
  input.removeAllListeners('data')
  input.on('data', () => {})
  input.resume()
  const timer = setTimeout(close, ALERT_LINGER_MS)
  timer.unref()
  input.once('end', close)
  output.end(HANDSHAKE_FAILURE_ALERT)
  return () => {
    clearTimeout(timer)
    input.removeListener('end', close)
  }
}

/**
 * The transport of an intercepted HTTP/2 CONNECT: one duplex over the tunnel's stream, which
 * the TLS server side is layered on (Node runs TLS over it through a JavaScript stream). It
 * keeps the tunnel's idle timer (any byte either way restarts it) and its byte counts,
 * carries backpressure both ways (the client is only read while TLS wants more), and passes a
 * clean end through as a half-close. Destroying it tears the stream down.
 */
export class TunnelTransport extends Duplex implements ClientTransport {
  readonly #client: InterceptedStream
  readonly #idleTimer: NodeJS.Timeout
  #bytesUp = 0
  #bytesDown = 0
  #reason: TransportSummary['reason'] = 'closed'
  #handshakeError: string | undefined

  constructor (client: InterceptedStream, idleTimeout: number) {
    super({ allowHalfOpen: true })
    this.#client = client
    this.#idleTimer = setTimeout(() => {
      this.#reason = 'idle-timeout'
      this.destroy()
    }, idleTimeout)
    this.#idleTimer.unref()

    const { input, output } = client
    input.on('data', (chunk: Buffer) => { if (!this.#received(chunk)) input.pause() })
    // Reading starts when TLS asks for bytes (_read), not before: the ClientHello waits while
    // the certificate provider runs.
    input.pause()
    input.once('end', () => this.push(null))
    input.on('error', (error) => this.destroy(error))
    output.on('error', (error) => this.destroy(error))
    output.once('close', () => { if (!this.destroyed) this.destroy() })
    input.once('close', () => { if (!input.readableEnded && !this.destroyed) this.destroy() })
  }

  get summary (): TransportSummary {
    return { bytesUp: this.#bytesUp, bytesDown: this.#bytesDown, reason: this.#reason, ...handshakeErrorField(this.#handshakeError) }
  }

  refuseHandshake (): void {
    this.#reason = 'handshake-refused'
    const cancel = refuseClientHandshake(this.#client.input, this.#client.output, () => this.destroy())
    this.once('close', cancel)
  }

  noteHandshakeFailure (reason: HandshakeCloseReason, detail?: string): void {
    if (this.#reason !== 'closed') return
    this.#reason = reason
    this.#handshakeError = detail
  }

  startTls (options: TLSSocketOptions): TLSSocket {
    return new TLSSocket(this, options)
  }

  override _read (): void {
    this.#client.input.resume()
  }

  override _write (chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.#bytesDown += chunk.length
    this.#idleTimer.refresh()
    const { output } = this.#client
    if (output.destroyed) {
      callback(new Error('the client side of the tunnel is closed'))
      return
    }
    if (output.write(chunk)) callback()
    else {
      const settle = (): void => {
        output.removeListener('drain', settle)
        output.removeListener('close', settle)
        callback()
      }
      output.once('drain', settle)
      output.once('close', settle)
    }
  }

  override _final (callback: (error?: Error | null) => void): void {
    this.#client.output.end()
    callback()
  }

  override _destroy (error: Error | null, callback: (error?: Error | null) => void): void {
    clearTimeout(this.#idleTimer)
    const { output } = this.#client
    if (error !== null) {
      if (this.#reason === 'closed') this.#reason = 'aborted'
      this.#client.abort()
    } else if (output.writableEnded && !output.writableFinished) {
      // A clean close: what is still queued for the client (the last response, close_notify)
      // goes out first.
      output.once('finish', () => output.destroy())
    } else if (!output.destroyed) {
      output.destroy()
    }
    callback(error)
  }

  #received (chunk: Buffer): boolean {
    this.#bytesUp += chunk.length
    this.#idleTimer.refresh()
    return this.push(chunk)
  }
}

/** The summary's `handshakeError` field when there is one, else nothing (the field stays absent). */
function handshakeErrorField (handshakeError: string | undefined): Pick<TransportSummary, 'handshakeError'> {
  return handshakeError === undefined ? {} : { handshakeError }
}

// The idle timer looks at the byte counters this many times per idle timeout, so a silent
// tunnel closes between one and 1.25 idle timeouts after its last byte.
const IDLE_CHECKS_PER_TIMEOUT = 4

/**
 * The transport of an intercepted HTTP/1.1 CONNECT: TLS is layered on the client's socket
 * itself (Node's native TLS over the socket's handle, no JavaScript stream in between), so
 * records are read, decrypted and handed to the HTTP parser without crossing into JavaScript.
 * Since no byte passes through here, the idle timer and byte counts read the socket's own
 * counters, which go on counting the TLS records under the TLS layer.
 */
export class SocketTransport extends EventEmitter implements ClientTransport {
  readonly #socket: Socket
  #head: Buffer
  readonly #readBefore: number
  readonly #writtenBefore: number
  readonly #idleTimer: NodeJS.Timeout
  #lastTraffic = -1
  #quietChecks = 0
  #reason: TransportSummary['reason'] = 'closed'
  #handshakeError: string | undefined

  constructor (connection: InterceptedConnection, idleTimeout: number) {
    super()
    const { socket, head } = connection
    this.#socket = socket
    this.#head = head
    // Everything read so far is the CONNECT head, except the early bytes and what is buffered.
    this.#readBefore = socket.bytesRead - head.length - socket.readableLength
    this.#writtenBefore = socket.bytesWritten
    this.#idleTimer = setInterval(() => this.#checkIdle(), Math.max(1, Math.floor(idleTimeout / IDLE_CHECKS_PER_TIMEOUT)))
    this.#idleTimer.unref()
    // Once TLS is layered on, read and write errors surface on the TLS socket and end in this
    // socket's close; before that, a reset client only has to close the tunnel.
    socket.on('error', () => {})
    // An end read before TLS took the socket over (a client that sent its ClientHello and its
    // FIN together) never reaches TLS, whose handshake could then only time out.
    socket.once('end', () => this.destroy())
    socket.once('close', () => {
      clearInterval(this.#idleTimer)
      this.emit('close')
    })
  }

  get destroyed (): boolean {
    return this.#socket.destroyed
  }

  get summary (): TransportSummary {
    return {
      bytesUp: this.#socket.bytesRead - this.#readBefore,
      bytesDown: this.#socket.bytesWritten - this.#writtenBefore,
      reason: this.#reason,
      ...handshakeErrorField(this.#handshakeError)
    }
  }

  destroy (): void {
    this.#socket.destroy()
  }

  noteHandshakeFailure (reason: HandshakeCloseReason, detail?: string): void {
    if (this.#reason !== 'closed') return
    this.#reason = reason
    this.#handshakeError = detail
  }

  refuseHandshake (): void {
    this.#reason = 'handshake-refused'
    const socket = this.#socket
    if (this.#head.length > 0) socket.unshift(this.#head)
    const cancel = refuseClientHandshake(socket, socket, () => socket.destroy())
    socket.once('close', cancel)
  }

  startTls (options: TLSSocketOptions): TLSSocket {
    // Node's TLS socket takes over whatever its socket has buffered as its first input.
    if (this.#head.length > 0) this.#socket.unshift(this.#head)
    this.#head = Buffer.alloc(0)
    return new TLSSocket(this.#socket, options)
  }

  #checkIdle (): void {
    const traffic = this.#socket.bytesRead + this.#socket.bytesWritten
    if (traffic !== this.#lastTraffic) {
      this.#lastTraffic = traffic
      this.#quietChecks = 0
      return
    }
    if (++this.#quietChecks < IDLE_CHECKS_PER_TIMEOUT) return
    this.#reason = 'idle-timeout'
    this.destroy()
  }
}

import { Duplex, type Readable } from 'node:stream'

/**
 * The client side of an intercepted tunnel once the 200 is out, whatever carries it: for an
 * HTTP/1.1 CONNECT the connection (read and written on the same socket, with the bytes the
 * client sent after its CONNECT head), for an HTTP/2 CONNECT one stream (read through Node's
 * compatibility request, written on the stream).
 */
export interface InterceptedClient {
  /** Where the client's bytes are read from. */
  readonly input: Readable
  /** Where bytes for the client are written. */
  readonly output: Duplex
  /** Bytes the client sent after its CONNECT head (HTTP/1.1), read before `input`. */
  readonly head: Buffer
  /** Tears the client side down after a failure (an HTTP/2 stream is reset with CONNECT_ERROR). */
  readonly abort: () => void
}

/** Byte counts of a finished intercepted tunnel, for logs. */
export interface TransportSummary {
  /** Bytes (TLS records) from the client. */
  readonly bytesUp: number
  /** Bytes (TLS records) to the client. */
  readonly bytesDown: number
  /** Why it ended. */
  readonly reason: 'closed' | 'idle-timeout' | 'aborted'
}

// A fatal handshake_failure alert (TLS record type 21, version 3.3, level 2, description 40),
// valid in plaintext before any ServerHello.
const HANDSHAKE_FAILURE_ALERT = Buffer.from([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28])

// Longest time a refused handshake keeps draining the client's bytes after the alert.
const ALERT_LINGER_MS = 2000

/**
 * One duplex over an {@link InterceptedClient}, which the TLS server side is layered on. It
 * keeps the tunnel's idle timer (any byte either way restarts it) and its byte counts, carries
 * backpressure both ways (the client is only read while TLS wants more), and passes a clean
 * end through as a half-close. Destroying it tears the client side down.
 */
export class TunnelTransport extends Duplex {
  readonly #client: InterceptedClient
  readonly #idleTimer: NodeJS.Timeout
  #bytesUp = 0
  #bytesDown = 0
  #reason: TransportSummary['reason'] = 'closed'

  constructor (client: InterceptedClient, idleTimeout: number) {
    super({ allowHalfOpen: true })
    this.#client = client
    this.#idleTimer = setTimeout(() => {
      this.#reason = 'idle-timeout'
      this.destroy()
    }, idleTimeout)
    this.#idleTimer.unref()

    const { input, output, head } = client
    if (head.length > 0) this.#received(head)
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

  /** Byte counts and why the tunnel ended (final once `'close'` has fired). */
  get summary (): TransportSummary {
    return { bytesUp: this.#bytesUp, bytesDown: this.#bytesDown, reason: this.#reason }
  }

  /**
   * Fails the client's handshake without TLS: sends a handshake_failure alert, ends the
   * client side, and discards whatever the client still sends until it closes (a close with
   * unread bytes could reset the connection before the client reads the alert).
   */
  refuseHandshake (): void {
    const { input, output } = this.#client
    input.removeAllListeners('data')
    input.on('data', () => {})
    input.resume()
    const timer = setTimeout(() => this.destroy(), ALERT_LINGER_MS)
    timer.unref()
    this.once('close', () => clearTimeout(timer))
    input.once('end', () => this.destroy())
    output.end(HANDSHAKE_FAILURE_ALERT)
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

import { Duplex } from 'node:stream'
import { TLSSocket, type TLSSocketOptions } from 'node:tls'
import type { ClientTransport, InterceptedStream, TransportSummary } from './client-transport'
import { refuseClientHandshake } from './handshake-refusal'

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
    return { bytesUp: this.#bytesUp, bytesDown: this.#bytesDown, reason: this.#reason }
  }

  refuseHandshake (): void {
    const cancel = refuseClientHandshake(this.#client.input, this.#client.output, () => this.destroy())
    this.once('close', cancel)
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

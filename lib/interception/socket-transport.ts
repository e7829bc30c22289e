import { EventEmitter } from 'node:events'
import type { Socket } from 'node:net'
import { TLSSocket, type TLSSocketOptions } from 'node:tls'
import type { ClientTransport, InterceptedConnection, TransportSummary } from './client-transport'
import { refuseClientHandshake } from './handshake-refusal'

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
      reason: this.#reason
    }
  }

  destroy (): void {
    this.#socket.destroy()
  }

  refuseHandshake (): void {
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

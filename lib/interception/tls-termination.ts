// TLS termination of an intercepted tunnel: the certificate for the CONNECT target, the handshake
// and its refusal, and the transports that carry the client side (an HTTP/1.1 socket or an HTTP/2
// stream).

import type { Server, Socket } from 'node:net'
import { TLSSocket, createSecureContext, type SecureContext, type TLSSocketOptions } from 'node:tls'
import type { FastifyBaseLogger } from 'fastify'
import { type Readable, type Writable, Duplex } from 'node:stream'
import { EventEmitter } from 'node:events'
import type { ForwardProxyDestination } from '../../types/destination'
import type {
  ForwardProxyCertificate,
  ForwardProxyCertificateProvider,
  ForwardProxyPemCertificate
} from '../../types/interception'
import type {
  ClientTransport,
  InterceptedStream,
  TransportSummary,
  HandshakeCloseReason,
  InterceptedConnection
} from '../core/runtime'
import { recordHandshake, recordHandshakeFailure, type HandshakeFailure } from '../telemetry/tls-metrics'
import { isClientRefusal } from './client-refusals'

/** One client handshake to run on an intercepted tunnel. */
export interface TlsTermination {
  readonly transport: ClientTransport
  /** The CONNECT target: the only name a certificate is asked for (never the client's SNI). */
  readonly destination: ForwardProxyDestination
  readonly provider: ForwardProxyCertificateProvider
  /** Covers the provider's time and the handshake, so a stalled ClientHello closes the tunnel. */
  readonly handshakeTimeout: number
  /** ALPN protocols offered, in preference order. */
  readonly alpnProtocols: readonly string[]
  /** Set as the TLS socket's `server`, which Node's HTTP servers read from their connections. */
  readonly server: Server
  readonly log: FastifyBaseLogger
  /** Called when the client refused the certificate with a TLS alert (see `isClientRefusal`). */
  readonly onClientRefusal?: () => void
  /** Called when the handshake completed. */
  readonly onHandshake?: () => void
}

/**
 * Terminates the client's TLS on an intercepted tunnel: asks the provider
 * for the certificate of the CONNECT target, then runs the server side of the handshake over
 * the tunnel. Resolves with the TLS socket once the handshake is done, or null when it failed
 * and the tunnel was closed: the provider returned null or failed (the client gets a
 * handshake_failure alert), the client spoke something other than TLS, or
 * everything took longer than the handshake timeout. Never rejects.
 */
export async function terminateTls (termination: TlsTermination): Promise<TLSSocket | null> {
  const { transport, destination, provider, log } = termination
  const started = performance.now()
  const abort = new AbortController()
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    log.info({ tunnel: { destination: `${destination.host}:${destination.port}` } }, 'intercepted tunnel closed: TLS handshake timed out')
    abort.abort()
    transport.noteHandshakeFailure('handshake-timeout')
    transport.destroy()
  }, termination.handshakeTimeout)
  timer.unref()
  const stop = (): void => { clearTimeout(timer); abort.abort() }
  transport.once('close', stop)

  let certificate: ForwardProxyCertificate | null
  try {
    certificate = await provider.getCertificate(destination, abort.signal)
  } catch (error) {
    if (!transport.destroyed) log.error({ err: error }, 'certificate provider failed; the client handshake is refused')
    certificate = null
  }
  if (transport.destroyed) {
    recordHandshakeFailure(timedOut ? 'timeout' : 'client_closed')
    return null
  }
  if (certificate === null) {
    recordHandshakeFailure('certificate_unavailable')
    stop()
    transport.refuseHandshake()
    return null
  }
  let secureContext
  try {
    secureContext = secureContextOf(certificate)
  } catch (error) {
    log.error({ err: error }, 'certificate provider returned unusable PEM material; the client handshake is refused')
    recordHandshakeFailure('certificate_unavailable')
    stop()
    transport.refuseHandshake()
    return null
  }

  const socket = transport.startTls({
    isServer: true,
    secureContext,
    ALPNProtocols: [...termination.alpnProtocols],
    server: termination.server
  })
  return await new Promise((resolve) => {
    let settled = false
    const fail = (failure: HandshakeFailure): void => {
      if (settled) return
      settled = true
      recordHandshakeFailure(timedOut ? 'timeout' : failure)
      stop()
      // A TLS socket over a stream does not close the stream it runs on; without this a client
      // that left mid-handshake would keep its tunnel slot until the handshake timeout.
      transport.destroy()
      resolve(null)
    }
    const onError = (error: Error & { code?: string }): void => {
      log.debug({ err: { code: error.code, message: error.message } }, 'intercepted tunnel: client TLS handshake failed')
      if (isClientRefusal(error)) termination.onClientRefusal?.()
      transport.noteHandshakeFailure('handshake-error', error.code ?? 'unknown')
      socket.destroy()
      fail('tls_error')
    }
    socket.once('error', onError)
    socket.once('close', () => fail('client_closed'))
    // A client that ends its side before the handshake is done can never finish it; the TLS
    // socket reports only 'end' and closes nothing, so without this the tunnel would keep its
    // slot until the handshake timeout.
    socket.once('end', () => {
      if (settled) return
      socket.destroy()
      transport.destroy()
      fail('client_closed')
    })
    socket.once('secure', () => {
      settled = true
      recordHandshake(started, socket.getProtocol())
      termination.onHandshake?.()
      clearTimeout(timer)
      transport.removeListener('close', stop)
      socket.removeListener('error', onError)
      // Later failures belong to the HTTP server the socket is handed to; this keeps one from crashing us.
      socket.on('error', () => {})
      resolve(socket)
    })
  })
}

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

// One SecureContext per object a provider returned: a provider that caches its PEM objects
// (as it should: it is called on every handshake) gets its contexts built once, not on every handshake.
const contexts = new WeakMap<ForwardProxyPemCertificate, SecureContext>()

/**
 * The SecureContext for what a certificate provider returned: the context itself, or one
 * built once from PEM material (leaf, then intermediates).
 * @throws Error when the PEM material cannot be loaded (bad PEM, key not matching the leaf).
 */
function secureContextOf (certificate: ForwardProxyCertificate): SecureContext {
  if (!isPem(certificate)) return certificate
  let context = contexts.get(certificate)
  if (context === undefined) {
    const { cert, key, chain } = certificate
    const intermediates = chain === undefined ? [] : Array.isArray(chain) ? chain : [chain]
    const pem = [cert, ...intermediates].map((part) => (typeof part === 'string' ? part : part.toString('latin1')).trim())
    context = createSecureContext({ cert: `${pem.join('\n')}\n`, key })
    contexts.set(certificate, context)
  }
  return context
}

function isPem (certificate: ForwardProxyCertificate): certificate is ForwardProxyPemCertificate {
  return 'cert' in certificate && 'key' in certificate
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

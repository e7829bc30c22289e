import type { Socket } from 'node:net'
import type { Duplex, Readable } from 'node:stream'
import type { DestinationReader } from './destination-reader'

/** Byte counts and outcome of a finished tunnel, for logs and metrics. */
export interface TunnelSummary {
  /** Bytes from the client to the destination. */
  readonly bytesUp: number
  /** Bytes from the destination to the client. */
  readonly bytesDown: number
  /** Why it ended: both sides finished, one side failed, or no traffic for the idle timeout. */
  readonly reason: 'closed' | 'client-error' | 'destination-error' | 'idle-timeout'
}

/** Settings of one relay. */
export interface TunnelRelayOptions {
  /** Close the tunnel after this many milliseconds without a byte either way. */
  readonly idleTimeout: number
  /** Called once when both sides are closed. */
  readonly onClose: (summary: TunnelSummary) => void
  /**
   * Tears the client side down because the destination failed. Default: a TCP RST where the
   * client stream is a socket, else `destroy()`; an HTTP/2 tunnel resets its stream instead.
   */
  readonly abortClient?: () => void
  /**
   * How the destination is read when it was dialed with this reader's `onread` option; without
   * one, the destination is piped to the client.
   */
  readonly reader?: DestinationReader
}

/**
 * The client side of a relay. For an HTTP/1.1 tunnel both are the client's socket; for an
 * HTTP/2 tunnel the bytes are read from the compatibility request and written on the stream.
 */
export interface TunnelClientStreams {
  /** Where the client's bytes are read from. */
  readonly input: Readable
  /** Where bytes for the client are written; its `'close'` ends the client side. */
  readonly output: Duplex
}

/**
 * Relays bytes both ways between a client and a destination socket until both are done.
 * Backpressure holds (pipe pauses the reader while the writer is full), half-close is carried
 * across (an end from one side ends the other side's writable half, traffic the other way goes
 * on), a failure on either side tears both down (the destination with a TCP RST), and the
 * tunnel closes after `idleTimeout` without traffic.
 */
export function relayTunnel (client: TunnelClientStreams, destination: Socket, options: TunnelRelayOptions): void {
  const { input, output } = client
  const abortClient = options.abortClient ?? (() => abort(output))
  let bytesUp = 0
  let bytesDown = 0
  let reason: TunnelSummary['reason'] = 'closed'
  let closedSides = 0

  const idleTimer = setTimeout(() => {
    reason = 'idle-timeout'
    output.destroy()
    destination.destroy()
  }, options.idleTimeout)
  idleTimer.unref()

  input.on('data', (chunk: Buffer) => { bytesUp += chunk.length; idleTimer.refresh() })
  // The client's end reaches the destination as a FIN one turn of the event loop later, unless
  // the client side was reset in the meantime: Node's HTTP/2 client ends a stream right before it
  // resets it (END_STREAM, then RST_STREAM in the same read), and a destination that got the FIN
  // first takes the upload for complete and stops reading, so it never sees the RST.
  input.pipe(destination, { end: false })
  input.once('end', () => setImmediate(() => { if (!destination.destroyed) destination.end() }))
  const countDown = (count: number): void => { bytesDown += count; idleTimer.refresh() }
  if (options.reader === undefined) {
    destination.on('data', (chunk: Buffer) => countDown(chunk.length))
    destination.pipe(output)
  } else {
    options.reader.start(destination, output, countDown)
  }

  output.on('error', () => {
    if (reason === 'closed') reason = 'client-error'
    abort(destination)
  })
  destination.on('error', () => {
    if (reason === 'closed') reason = 'destination-error'
    abortClient()
  })

  const bothClosed = (): void => {
    closedSides++
    if (closedSides === 2) {
      clearTimeout(idleTimer)
      options.onClose({ bytesUp, bytesDown, reason })
    }
  }
  // Once one side is gone the other can only finish if both its halves already ended (a clean
  // double half-close); anything else is an abort and is torn down.
  output.once('close', () => {
    if (!isFinished(destination)) abort(destination)
    bothClosed()
  })
  destination.once('close', () => {
    if (!isFinished(output)) abortClient()
    bothClosed()
  })
}

function isFinished (stream: Duplex): boolean {
  return stream.destroyed || (stream.readableEnded && stream.writableEnded)
}

/**
 * Tears a side down because the other side failed: with a TCP RST where the stream is a TCP
 * socket, so the peer sees an abort (ECONNRESET), not a clean end it could mistake for
 * a complete transfer.
 */
export function abort (stream: Duplex): void {
  if (stream.destroyed) return
  const socket = stream as Partial<Socket>
  if (typeof socket.resetAndDestroy !== 'function' || socket.connecting === true) {
    stream.destroy()
    return
  }
  // After end() with nothing left to write, the shutdown that sends the FIN is in progress, and
  // libuv refuses to reset a socket during it: Node then emits EINVAL and never closes the
  // handle (a leaked socket and tunnel slot). The reset waits for the shutdown to finish.
  if (stream.writableEnded && !stream.writableFinished && stream.writableLength === 0) {
    stream.once('finish', () => resetOrDestroy(socket as Socket))
    return
  }
  resetOrDestroy(socket as Socket)
}

/**
 * Resets a TCP socket. A socket over another handle (a TLS connection of an HTTPS or HTTP/2
 * listener, a Unix socket) cannot be reset, `resetAndDestroy()` throws
 * ERR_INVALID_HANDLE_TYPE, and it is destroyed instead.
 */
function resetOrDestroy (socket: Socket): void {
  if (socket.destroyed) return
  try {
    socket.resetAndDestroy()
  } catch {
    socket.destroy()
  }
}

// Relays an opaque tunnel's bytes both ways and tears it down.

import { EventEmitter } from 'node:events'
import { Socket } from 'node:net'
import type { Duplex, Readable, Writable } from 'node:stream'
import type { DestinationReader } from './destination-reader'

/** Byte counts and outcome of a finished tunnel, for logs and metrics. */
interface TunnelSummary {
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
  /**
   * What the destination's bytes go through before they reach the client (a WebSocket relay's
   * scrubber); its failure tears the tunnel down as a destination failure. Not with `reader`.
   */
  readonly downstream?: Duplex
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
  /**
   * The listeners already reading `input`, when something read it before the relay (an
   * HTTP/1.1 CONNECT's connection is watched until its answer): the relay takes them over
   * instead of adding its own.
   */
  readonly reading?: ClientReading
}

/** Listeners already reading a tunnel's client, which a relay can take over. */
export interface ClientReading {
  /**
   * From now on sends each chunk read to `onData` and the end of the input to `onEnd`, and
   * returns the bytes read before (possibly none), which the caller forwards first. The input
   * is neither paused nor resumed here.
   */
  handOver (onData: (chunk: Buffer) => void, onEnd: () => void): Buffer
}

/**
 * Relays bytes both ways between a client and a destination socket until both are done.
 * Backpressure holds (neither side is read while the other's writes are over their high-water
 * mark), half-close is carried across (an end from one side ends the other side's writable
 * half, traffic the other way goes on), a failure on either side tears both down (the
 * destination with a TCP RST), and the tunnel closes after `idleTimeout` without traffic.
 */
export function relayTunnel (client: TunnelClientStreams, destination: Socket, options: TunnelRelayOptions): void {
  const { output } = client
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

  // The client's end reaches the destination as a FIN one turn of the event loop later, unless
  // the client side was reset in the meantime: Node's HTTP/2 client ends a stream right before it
  // resets it (END_STREAM, then RST_STREAM in the same read), and a destination that got the FIN
  // first takes the upload for complete and stops reading, so it never sees the RST.
  const endUpload = (): void => { setImmediate(() => { if (!destination.destroyed) destination.end() }) }
  forwardWithBackpressure(client, destination, (count) => { bytesUp += count; idleTimer.refresh() }, endUpload)
  const countDown = (count: number): void => { bytesDown += count; idleTimer.refresh() }
  const { downstream } = options
  if (downstream !== undefined) {
    destination.on('data', (chunk: Buffer) => countDown(chunk.length))
    destination.pipe(downstream).pipe(output)
    downstream.on('error', () => {
      if (reason === 'closed') reason = 'destination-error'
      abort(destination)
      abortClient()
    })
  } else if (options.reader === undefined) {
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
      letGoOfSocket(destination)
      letGoOfSocket(output)
    }
  }
  // Once one side is gone the other can only finish if both its halves already ended (a clean
  // double half-close); anything else is an abort and is torn down.
  output.on('close', () => {
    if (!isFinished(destination)) abort(destination)
    bothClosed()
  })
  destination.on('close', () => {
    options.reader?.stop()
    if (!isFinished(output)) abortClient()
    bothClosed()
  })
}

/**
 * Writes everything the client's `input` reads to `destination`, calling `onBytes` with each
 * chunk's size, and `onEnd` when the input ends; while the destination's buffer is over its
 * high-water mark the input is paused, and it resumes on `'drain'`. What
 * `pipe(destination, { end: false })` does for one destination, with one listener instead of
 * pipe's half a dozen listeners and closures, which every CONNECT paid for. Listeners already
 * reading the input (`client.reading`) are taken over, and what they read before goes first.
 * Ending and errors are the relay's: nothing is written to a destroyed destination.
 */
function forwardWithBackpressure (client: TunnelClientStreams, destination: Writable, onBytes: (count: number) => void, onEnd: () => void): void {
  const { input, reading } = client
  const resumeInput = (): void => { input.resume() }
  const waitForDrain = (): void => {
    input.pause()
    destination.once('drain', resumeInput)
  }
  const onData = (chunk: Buffer): void => {
    onBytes(chunk.length)
    if (destination.destroyed) return
    if (!destination.write(chunk)) waitForDrain()
  }
  if (reading === undefined) {
    input.on('data', onData)
    input.on('end', onEnd)
  } else {
    const early = reading.handOver(onData, onEnd)
    if (early.length > 0) {
      onBytes(early.length)
      destination.write(early)
    }
  }
  // A 'data' listener does not restart a stream paused on purpose (the client's socket is paused
  // when it sent too much before its CONNECT was answered).
  if (destination.writableNeedDrain) waitForDrain()
  else input.resume()
}

/**
 * Drops every listener of a finished tunnel's socket (a net.Socket, TLS included; an HTTP/2
 * stream is left alone), leaving one that ignores errors. Whatever still holds a closed socket
 * (an application's list of its connections, say) would otherwise hold everything its listeners
 * reach: the relay, the request and its reply, the tunnel's admission. When the tunnel registry
 * kept its sockets in Sets, each young-generation collection copied all of that for the tunnels
 * closed since the last full one (bench/NOTES.md, thirteenth session). Called from the last
 * 'close' listener of the relay: the listeners of that event still run, Node calls a copy of the
 * list.
 */
function letGoOfSocket (stream: Duplex): void {
  if (!(stream instanceof Socket)) return
  // EventEmitter's own method: a Readable's override also queues a tick to recompute its reading
  // state, which a closed socket has no use for.
  EventEmitter.prototype.removeAllListeners.call(stream)
  stream.on('error', ignoreError)
}

function ignoreError (): void {}

function isFinished (stream: Duplex): boolean {
  return stream.destroyed || (stream.readableEnded && stream.writableEnded)
}

/**
 * Tears a side down because the other side failed: with a TCP RST where the stream is a TCP
 * socket, so the peer sees an abort (ECONNRESET), not a clean end it could mistake for
 * a complete transfer.
 */
function abort (stream: Duplex): void {
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

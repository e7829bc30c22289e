import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'

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
}

/**
 * Relays bytes both ways between a client stream and a destination socket until both are done.
 * Backpressure holds (pipe pauses the reader while the writer is full), half-close is carried
 * across (a FIN from one side ends the other side's writable half, traffic the other way goes
 * on), a failure on either side tears both down, and the tunnel closes after `idleTimeout`
 * without traffic.
 */
export function relayTunnel (client: Duplex, destination: Socket, options: TunnelRelayOptions): void {
  let bytesUp = 0
  let bytesDown = 0
  let reason: TunnelSummary['reason'] = 'closed'
  let closedSides = 0

  const idleTimer = setTimeout(() => {
    reason = 'idle-timeout'
    client.destroy()
    destination.destroy()
  }, options.idleTimeout)
  idleTimer.unref()

  client.on('data', (chunk: Buffer) => { bytesUp += chunk.length; idleTimer.refresh() })
  destination.on('data', (chunk: Buffer) => { bytesDown += chunk.length; idleTimer.refresh() })
  client.pipe(destination)
  destination.pipe(client)

  client.on('error', () => {
    if (reason === 'closed') reason = 'client-error'
    abort(destination)
  })
  destination.on('error', () => {
    if (reason === 'closed') reason = 'destination-error'
    abort(client)
  })

  const onSideClosed = (other: Duplex) => () => {
    // Once one side is gone the other can only finish if both its halves already ended
    // (a clean double half-close); anything else is an abort and is torn down.
    if (!other.destroyed && !(other.readableEnded && other.writableEnded)) other.destroy()
    closedSides++
    if (closedSides === 2) {
      clearTimeout(idleTimer)
      options.onClose({ bytesUp, bytesDown, reason })
    }
  }
  client.once('close', onSideClosed(destination))
  destination.once('close', onSideClosed(client))
}

/**
 * Tears a side down because the other side failed: with a TCP RST where the stream is a TCP
 * socket, so the peer sees an abort (ECONNRESET), not a clean end it could mistake for
 * a complete transfer.
 */
function abort (stream: Duplex): void {
  if (stream.destroyed) return
  const socket = stream as Partial<Socket>
  if (typeof socket.resetAndDestroy === 'function' && socket.connecting !== true) socket.resetAndDestroy()
  else stream.destroy()
}

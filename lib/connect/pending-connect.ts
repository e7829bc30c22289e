import type { Socket } from 'node:net'

/**
 * Most bytes kept from a client that sends before its CONNECT is answered. Past this the socket
 * is paused: the client waits (TCP backpressure), and its end is no longer seen until the answer.
 */
export const MAX_EARLY_BYTES = 64 * 1024

/** An HTTP/1.1 CONNECT's connection between its head and the proxy's answer. */
export interface PendingConnect {
  /**
   * Stops watching, pauses the socket for whoever reads it next and returns every byte the
   * client sent after its CONNECT head: Node's own `head` first, then what was read meanwhile.
   */
  takeEarlyBytes (): Buffer
}

/**
 * Reads a CONNECT's connection until the proxy answers, so that a client that gives up is seen
 * at once. A client that ends its sending side (FIN) or resets before its answer has left: its
 * connection is destroyed, which aborts any credential check, DNS lookup or dial still waiting for
 * it, and nothing is dialed for it. Go's Transport, for one, abandons spare CONNECTs it no longer
 * needs, and a proxy that dialed them anyway would do its most work when it is most loaded.
 * Like Squid (`half_closed_clients off`), a half-close is not told apart from a close here; once
 * the tunnel is established a half-close is carried across as usual.
 *
 * Without this, Node leaves the socket unread after its `'connect'` event and the FIN waits in
 * the socket's buffer, unseen, until the tunnel starts reading.
 */
export function watchPendingConnect (socket: Socket, head: Buffer): PendingConnect {
  const early: Buffer[] = head.length > 0 ? [head] : []
  let earlyLength = head.length
  const onData = (chunk: Buffer): void => {
    early.push(chunk)
    earlyLength += chunk.length
    if (earlyLength >= MAX_EARLY_BYTES) socket.pause()
  }
  const onEnd = (): void => { socket.destroy() }
  socket.on('data', onData)
  socket.once('end', onEnd)
  return {
    takeEarlyBytes () {
      socket.removeListener('data', onData)
      socket.removeListener('end', onEnd)
      socket.pause()
      return early.length === 1 ? early[0] as Buffer : Buffer.concat(early, earlyLength)
    }
  }
}

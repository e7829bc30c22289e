import type { Socket } from 'node:net'
import { Server as TlsServer } from 'node:tls'
import type { ProxyServer } from './attach-server'

/**
 * Closes every plain-text connection of `server` on which the client has sent no byte within
 * `timeout` ms of opening it. Node's `headersTimeout` starts counting only at the first byte and
 * its keep-alive timer only after a response, so without this a client could hold a connection
 * (and a descriptor) for ever by opening it and saying nothing. A connection that has sent
 * anything is left to those timers and to the tunnel idle timeout. TLS servers are skipped:
 * their `handshakeTimeout` already bounds a silent client.
 */
export function closeSilentConnections (server: ProxyServer, timeout: number): void {
  if (server instanceof TlsServer) return
  server.on('connection', (socket: Socket) => {
    const timer = setTimeout(() => {
      // The byte counter of the socket's handle, so reads the HTTP parser takes directly from
      // the handle (never emitted as 'data') count too.
      if (socket.bytesRead === 0) socket.destroy()
    }, timeout)
    timer.unref()
    socket.once('close', () => clearTimeout(timer))
  })
}

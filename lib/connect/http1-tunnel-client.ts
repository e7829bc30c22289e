import type { Socket } from 'node:net'
import type { Http1ConnectContext } from './http1-connection'
import type { TunnelClient } from './tunnel-client'
import { relayTunnel, type TunnelRelayOptions } from './tunnel-relay'

/**
 * An HTTP/1.1 CONNECT: the whole connection becomes the tunnel. The 200 is written on the raw
 * socket, followed by any bytes the client sent after its head (e.g. an early ClientHello).
 */
export function http1TunnelClient (context: Http1ConnectContext): TunnelClient {
  const { socket, head, response } = context
  return {
    get gone () { return socket.destroyed },
    closable: socket,
    onGone (listener) {
      socket.once('close', listener)
      return () => socket.removeListener('close', listener)
    },
    establish (upstream: Socket, relay: TunnelRelayOptions) {
      response.detachSocket(socket)
      // The server's socket inactivity timeout (Fastify connectionTimeout) is for HTTP; the tunnel has its own.
      socket.setTimeout(0)
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      if (head.length > 0) upstream.write(head)
      relayTunnel({ input: socket, output: socket }, upstream, relay)
    }
  }
}

import type { Socket } from 'node:net'
import type { Http1ConnectContext } from './http1-connection'
import type { TunnelClient } from './tunnel-client'
import { relayTunnel, type TunnelRelayOptions } from './tunnel-relay'

/**
 * An HTTP/1.1 CONNECT: the whole connection becomes the tunnel. The 200 is written on the raw
 * socket, followed by any bytes the client sent after its head (e.g. an early ClientHello).
 */
export function http1TunnelClient (context: Http1ConnectContext): TunnelClient {
  const { socket, pending, response } = context
  return {
    http2: false,
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
      // TLS servers (an HTTPS listener, the HTTP/1.1 side of an HTTP/2 one) make sockets that end
      // themselves when the client ends; a tunnel carries the half-close across instead, so the
      // destination's answer after the client's FIN still reaches the client.
      socket.allowHalfOpen = true
      const early = pending.takeEarlyBytes()
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      if (early.length > 0) upstream.write(early)
      relayTunnel({ input: socket, output: socket }, upstream, relay)
    },
    intercept () {
      const head = pending.takeEarlyBytes()
      response.detachSocket(socket)
      socket.setTimeout(0)
      socket.allowHalfOpen = true
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      return { kind: 'connection', socket, head }
    }
  }
}

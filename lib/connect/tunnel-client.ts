// The client side of a CONNECT tunnel, whatever carries it: a whole HTTP/1.1 connection or one
// HTTP/2 stream, each answering 200 and relaying in its own way.

import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { constants, type Http2ServerRequest } from 'node:http2'
import type { ForwardProxyDestination } from '../../types/destination'
import type { InterceptedClient } from '../core/runtime'
import type { Http1ConnectContext } from './listener'
import { relayTunnel, type TunnelRelayOptions } from './relay'
import { tunnelSetups } from './tunnel-setups'
import { resetStream } from '../protocol/cut-response'

/**
 * The client side of a CONNECT, whatever carries it: a whole HTTP/1.1 connection or one
 * HTTP/2 stream. The shared CONNECT flow (target, policy, limit, dial) only needs to know
 * whether the client is still there, and how to answer 200 and start relaying.
 */
export interface TunnelClient {
  /** True when the CONNECT came on an HTTP/2 stream, false for an HTTP/1.1 connection. */
  readonly http2: boolean
  /** True once the client's connection or stream is gone. */
  readonly gone: boolean
  /** The stream closed when the client leaves (tracked so that server shutdown ends it). */
  readonly closable: Duplex
  /** Calls `listener` if the client leaves; returns a function that stops listening. */
  onGone (listener: () => void): () => void
  /**
   * Counts the tunnel to `destination` as being set up until it is answered (or, intercepted,
   * until its TLS handshake is done): see tunnel-setups.ts. Only HTTP/1.1 tunnels are counted.
   */
  countSetup (destination: ForwardProxyDestination): void
  /** Answers 200 and relays bytes both ways between the client and `upstream` until both end. */
  establish (upstream: Socket, relay: TunnelRelayOptions): void
  /**
   * Answers 200 for an intercepted tunnel (no destination dialed) and hands over the client's
   * side: the connection or stream, with any bytes the client sent early, for TLS termination.
   */
  intercept (): InterceptedClient
}

/**
 * An HTTP/1.1 CONNECT: the whole connection becomes the tunnel. The 200 is written on the raw
 * socket, followed by any bytes the client sent after its head (e.g. an early ClientHello).
 */
export function http1TunnelClient (context: Http1ConnectContext): TunnelClient {
  return new Http1TunnelClient(context)
}

// Classes, not object literals: one object per tunnel, its methods shared (a literal would make
// a closure per method for every CONNECT).
class Http1TunnelClient implements TunnelClient {
  readonly http2 = false
  readonly #context: Http1ConnectContext

  constructor (context: Http1ConnectContext) {
    this.#context = context
  }

  get gone (): boolean { return this.#context.socket.destroyed }

  get closable (): Duplex { return this.#context.socket }

  onGone (listener: () => void): () => void { return onceClosed(this.closable, listener) }

  countSetup (destination: ForwardProxyDestination): void { tunnelSetups.begin(this.#context.socket, destination) }

  establish (upstream: Socket, relay: TunnelRelayOptions): void {
    const { socket, pending } = this.#context
    this.#answer()
    tunnelSetups.end(socket)
    // The relay takes over the listeners that watched the connection: the bytes the client sent
    // early go first.
    relayTunnel({ input: socket, output: socket, reading: pending }, upstream, relay)
  }

  intercept (): InterceptedClient {
    const head = this.#context.pending.takeEarlyBytes()
    this.#answer()
    return { kind: 'connection', socket: this.#context.socket, head }
  }

  /** Takes the socket from Node's HTTP response and writes the 200. */
  #answer (): void {
    const { socket, response } = this.#context
    response.detachSocket(socket)
    // The server's socket inactivity timeout (Fastify connectionTimeout) is for HTTP; the tunnel has its own.
    socket.setTimeout(0)
    // TLS servers (an HTTPS listener, the HTTP/1.1 side of an HTTP/2 one) make sockets that end
    // themselves when the client ends; a tunnel carries the half-close across instead, so the
    // destination's answer after the client's FIN still reaches the client.
    socket.allowHalfOpen = true
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
  }
}

/**
 * An HTTP/2 CONNECT: one stream of the session becomes the tunnel,
 * other streams go on. Bytes from the client are read through Node's compatibility request,
 * which already consumes the stream and pauses it when unread (so HTTP/2 flow control holds
 * a fast client back); bytes to the client are written on the stream, whose writes wait for
 * the client's flow-control window. A destination failure resets the stream with
 * CONNECT_ERROR; a client that resets the stream gets the destination closed with a TCP RST.
 */
export function http2TunnelClient (request: Http2ServerRequest): TunnelClient {
  return new Http2TunnelClient(request)
}

class Http2TunnelClient implements TunnelClient {
  readonly http2 = true
  readonly #request: Http2ServerRequest

  constructor (request: Http2ServerRequest) {
    this.#request = request
  }

  get gone (): boolean {
    const { stream } = this.#request
    return stream.destroyed || stream.closed
  }

  get closable (): Duplex { return this.#request.stream }

  onGone (listener: () => void): () => void { return onceClosed(this.closable, listener) }

  countSetup (): void {}

  establish (upstream: Socket, relay: TunnelRelayOptions): void {
    const { stream } = this.#request
    stream.setTimeout(0)
    stream.respond({ ':status': 200 })
    relayTunnel({ input: this.#request, output: stream }, upstream, {
      ...relay,
      abortClient: () => resetStream(stream, constants.NGHTTP2_CONNECT_ERROR)
    })
  }

  intercept (): InterceptedClient {
    const { stream } = this.#request
    stream.setTimeout(0)
    stream.respond({ ':status': 200 })
    return { kind: 'stream', input: this.#request, output: stream, abort: () => resetStream(stream, constants.NGHTTP2_CONNECT_ERROR) }
  }
}

/** Calls `listener` when `stream` closes; returns a function that stops listening. */
function onceClosed (stream: Duplex, listener: () => void): () => void {
  stream.on('close', listener)
  return () => stream.removeListener('close', listener)
}

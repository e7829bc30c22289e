import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { TunnelRelayOptions } from './tunnel-relay'
import type { InterceptedClient } from '../interception/client-transport'

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
  /** Answers 200 and relays bytes both ways between the client and `upstream` until both end. */
  establish (upstream: Socket, relay: TunnelRelayOptions): void
  /**
   * Answers 200 for an intercepted tunnel (no destination dialed) and hands over the client's
   * side: the connection or stream, with any bytes the client sent early, for TLS termination.
   */
  intercept (): InterceptedClient
}

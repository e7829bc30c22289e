import type { Context } from '@opentelemetry/api'
import type { Http2Session } from 'node:http2'
import type { TLSSocket } from 'node:tls'
import type { ForwardProxyInterception } from '../../types/interception'
import type { ForwardProxyUser } from '../../types/user'

/** What the requests of one intercepted tunnel inherit from the CONNECT that opened it. */
export interface InterceptedTunnel {
  /** `request.interception` of every request inside (one frozen object per tunnel). */
  readonly interception: ForwardProxyInterception
  /** The user who opened the tunnel (`request.proxyUser` inside), or null without auth. */
  readonly user: ForwardProxyUser | null
  /** The address of the client that opened the tunnel, for the access log of requests inside. */
  readonly clientAddress: string | undefined
  /** The tunnel's trace context: the parent of the spans of requests inside that bring none. */
  readonly traceContext: Context | undefined
}

// Keyed by the endpoint's connection objects: the TLS socket (HTTP/1.1 requests name it as
// their socket) and the HTTP/2 session (HTTP/2 requests reach it through their stream).
const tunnels = new WeakMap<object, InterceptedTunnel>()

/** Records that `connection` (a terminated TLS socket or its HTTP/2 session) carries `tunnel`. */
export function rememberInterceptedConnection (connection: TLSSocket | Http2Session, tunnel: InterceptedTunnel): void {
  tunnels.set(connection, tunnel)
}

/** The raw-request shapes this module reads: an HTTP/1.1 request or an HTTP/2 compatibility request. */
interface RawRequestLike {
  readonly socket?: unknown
  readonly stream?: { readonly session?: unknown }
}

/**
 * The intercepted tunnel a raw request came through, or undefined for every other request
 * (the application's own, forwarding, CONNECT on the proxy's listeners).
 */
export function interceptedTunnelOf (req: object): InterceptedTunnel | undefined {
  const { stream, socket } = req as RawRequestLike
  // An HTTP/2 request's `socket` is a proxy object, never the TLS socket itself: use its session.
  const connection = stream !== undefined ? stream.session : socket
  return typeof connection === 'object' && connection !== null ? tunnels.get(connection) : undefined
}

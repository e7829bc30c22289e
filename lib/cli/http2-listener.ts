// The HTTP/2 TLS listeners of the bundled server, their timeouts, and how their connections are
// closed on shutdown.

import {
  createSecureServer,
  type Http2SecureServer,
  type SecureServerOptions,
  type ServerHttp2Session
} from 'node:http2'
import type { Server as HttpServer } from 'node:http'
import type { TLSSocket } from 'node:tls'
import type { ListenerTlsFiles } from './config-files'
import type { ProxyServer } from '../connect/listener'
import { HTTP2_MAX_CONCURRENT_STREAMS } from '../protocol/http2-limits'

/**
 * HTTP/2 flow-control windows the proxy grants clients for the bytes they send (bytes in
 * flight per tunnel stream, and per connection across all its streams). HTTP/2's defaults are
 * 64 KiB for both, so an upload through a tunnel moves at most 64 KiB per round trip, shared by
 * every tunnel of the connection: measured through a 50 ms round trip, 1.2 MiB/s for one
 * tunnel and 0.8 MiB/s for four together, against 15.6 and 55.7 MiB/s with these windows.
 * The stream window is also what the proxy may buffer for a tunnel whose destination reads
 * slowly (an HTTP/1.1 tunnel buffers as much or more in its TCP buffers); the connection window
 * adds nothing to that, as data delivered to a stream is bounded by the stream's window.
 */
export const HTTP2_RECEIVE_WINDOWS = {
  /** `settings.initialWindowSize`, per stream. */
  stream: 1024 * 1024,
  /** Set with `session.setLocalWindowSize()` on every session (HTTP/2 has no setting for it). */
  connection: 16 * 1024 * 1024
} as const

/**
 * Node options of a TLS listener with `http2: true`: ALPN offers `h2` and `http/1.1`
 * (`allowHTTP1`), so one port serves HTTP/2 CONNECT streams and HTTP/1.1 clients.
 */
export function http2ServerOptions (files: ListenerTlsFiles): SecureServerOptions {
  return {
    ...files,
    allowHTTP1: true,
    handshakeTimeout: TLS_HANDSHAKE_TIMEOUT,
    settings: { initialWindowSize: HTTP2_RECEIVE_WINDOWS.stream, maxConcurrentStreams: HTTP2_MAX_CONCURRENT_STREAMS }
  }
}

/**
 * Prepares an HTTP/2 server for the bundled proxy, once: what Node's HTTP/2 server does not
 * take as options for its HTTP/1.1 connections, set as properties (the timeouts of
 * {@link SERVER_TIMEOUTS}: left alone, `keepAliveTimeout` is unset so idle connections never
 * close, and `requestTimeout` cuts uploads at 5 minutes; and `requireHostHeader`, unset so an
 * HTTP/1.1 request without Host would be served where every other listener answers 400), the
 * connection window of every new session, and the tracking of its connections for shutdown.
 * Call before it accepts connections.
 */
export function prepareHttp2Server (server: Http2SecureServer): void {
  if (prepared.has(server)) return
  prepared.add(server)
  Object.assign(server, SERVER_TIMEOUTS, { requireHostHeader: true })
  server.on('session', (session) => {
    if (!session.destroyed) session.setLocalWindowSize(HTTP2_RECEIVE_WINDOWS.connection)
  })
  trackHttp2Connections(server)
}

const prepared = new WeakSet<Http2SecureServer>()

/**
 * Creates the server of a further listener with `http2: true` (Fastify creates the first one),
 * prepared like Fastify's own, including the graceful close of a session idle for
 * {@link HTTP2_SESSION_TIMEOUT} that Fastify adds to its HTTP/2 servers.
 */
export function createHttp2Listener (files: ListenerTlsFiles): Http2SecureServer {
  const server = createSecureServer(http2ServerOptions(files))
  prepareHttp2Server(server)
  server.on('session', (session) => {
    session.setTimeout(HTTP2_SESSION_TIMEOUT, () => { session.close() })
  })
  return server
}

interface Http2Connections {
  readonly sessions: Set<ServerHttp2Session>
  readonly sockets: Set<TLSSocket>
  closing: boolean
}

const http2Servers = new WeakMap<Http2SecureServer, Http2Connections>()

/**
 * Remembers the HTTP/2 sessions and the TLS connections (HTTP/2 and HTTP/1.1) of an HTTP/2
 * server, for shutdown: Node 20's HTTP/2 server has no `closeAllConnections`, and its
 * `close()` waits for every session, idle ones included. Call before it accepts connections.
 */
function trackHttp2Connections (server: Http2SecureServer): void {
  if (http2Servers.has(server)) return
  const tracked: Http2Connections = { sessions: new Set(), sockets: new Set(), closing: false }
  http2Servers.set(server, tracked)
  server.on('secureConnection', (socket: TLSSocket) => {
    tracked.sockets.add(socket)
    socket.once('close', () => tracked.sockets.delete(socket))
  })
  server.on('session', (session) => {
    tracked.sessions.add(session)
    session.once('close', () => tracked.sessions.delete(session))
    // A session set up while shutting down (its handshake had begun) gets no new streams.
    if (tracked.closing) session.close()
  })
}

/**
 * Shutdown, first step: closes the idle connections of a listener. HTTP/1.1 keep-alive
 * connections waiting for a request are closed; every HTTP/2 session is closed gracefully
 * (GOAWAY: no new streams; it ends when its open streams have, at once when it has none).
 */
export function closeIdleConnections (server: ProxyServer): void {
  // Node's HTTP/2 server has it too, for its HTTP/1.1 connections; its typings omit it.
  (server as Partial<Pick<HttpServer, 'closeIdleConnections'>>).closeIdleConnections?.()
  const tracked = http2Servers.get(server as Http2SecureServer)
  if (tracked === undefined) return
  tracked.closing = true
  for (const session of tracked.sessions) if (!session.closed) session.close()
}

/** Shutdown, last step (the grace period is over): destroys every connection still open. */
export function closeAllConnections (server: ProxyServer): void {
  if ('closeAllConnections' in server) server.closeAllConnections()
  const tracked = http2Servers.get(server as Http2SecureServer)
  if (tracked === undefined) return
  for (const session of tracked.sessions) session.destroy()
  for (const socket of tracked.sockets) socket.destroy()
}

/**
 * Node server timeouts the bundled server sets on every listener, passed as server options so
 * the servers Fastify creates for extra addresses of a name (`localhost`) get them too.
 * - headersTimeout: a client must finish its request head within 30 s (slow-head attacks).
 * - requestTimeout 0: no deadline on a whole request, so long uploads through the proxy are not
 *   cut; forwarded requests are bounded by httpActivityTimeout and tunnels by their idle timeout.
 * - keepAliveTimeout: idle keep-alive client connections close after 5 s.
 * None of these starts before a connection's first byte: a silent one is closed by the plugin's
 * `limits.firstByteTimeout`, or on TLS listeners by {@link TLS_HANDSHAKE_TIMEOUT}.
 */
export const SERVER_TIMEOUTS = {
  headersTimeout: 30_000,
  requestTimeout: 0,
  keepAliveTimeout: 5_000
} as const

/**
 * An HTTP/2 connection (session) with no frames either way for 72 s is closed gracefully
 * (GOAWAY: no new streams; streams still open, such as a quiet tunnel, go on until they end).
 * The value is Fastify's `http2SessionTimeout` default, applied to every HTTP/2 listener.
 */
export const HTTP2_SESSION_TIMEOUT = 72_000

/**
 * A client of a TLS listener (HTTPS or HTTP/2) must finish its TLS handshake within 10 s, the
 * default `handshakeTimeout` of intercepted tunnels too; Node's own default is 120 s, which let
 * a client that opens connections and never sends a ClientHello hold each one for two minutes.
 */
export const TLS_HANDSHAKE_TIMEOUT = 10_000

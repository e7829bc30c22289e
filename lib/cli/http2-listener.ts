import { createSecureServer, type Http2SecureServer, type SecureServerOptions } from 'node:http2'
import type { ListenerTlsFiles } from './listener-tls'
import { trackHttp2Connections } from './connection-shutdown'
import { HTTP2_SESSION_TIMEOUT, SERVER_TIMEOUTS, TLS_HANDSHAKE_TIMEOUT } from './server-timeouts'

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
 * Streams one HTTP/2 connection may have open at once (`SETTINGS_MAX_CONCURRENT_STREAMS`);
 * a stream beyond it is refused with RST_STREAM REFUSED_STREAM before the proxy sees it.
 * Node's default is unlimited, which let one client hold every tunnel slot
 * (`maxConcurrentTunnels`) on a single connection; 100 is what HTTP/2 recommends as a minimum.
 */
export const HTTP2_MAX_CONCURRENT_STREAMS = 100

/**
 * Node options of a TLS listener with `http2: true`: ALPN offers `h2` and `http/1.1`
 * (`allowHTTP1`), so one port serves HTTP/2 CONNECT streams and HTTP/1.1 clients.
 */
export function http2ServerOptions (files: ListenerTlsFiles): SecureServerOptions {
  return { ...files, allowHTTP1: true, handshakeTimeout: TLS_HANDSHAKE_TIMEOUT, settings: { initialWindowSize: HTTP2_RECEIVE_WINDOWS.stream, maxConcurrentStreams: HTTP2_MAX_CONCURRENT_STREAMS } }
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

import type { Server as HttpServer } from 'node:http'
import type { Http2SecureServer, ServerHttp2Session } from 'node:http2'
import type { TLSSocket } from 'node:tls'
import type { ProxyServer } from '../attach-server'

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
export function trackHttp2Connections (server: Http2SecureServer): void {
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

import type { Http2SecureServer } from 'node:http2'

// Node HTTP server limits copied from the application's server, so intercepted requests get them
// too. connectionsCheckingInterval is how often Node looks for heads and requests over time.
const COPIED_LIMITS = [
  'keepAliveTimeout', 'headersTimeout', 'requestTimeout', 'maxHeadersCount', 'maxRequestsPerSocket',
  'connectionsCheckingInterval'
] as const

/**
 * Gives the in-memory endpoint the application server's HTTP/1.1 limits: idle
 * keep-alive connections close after keepAliveTimeout, and a request head that takes longer than
 * headersTimeout (or a request longer than requestTimeout) is answered 408 and its connection
 * closed, so a client trickling its head byte by byte cannot hold an intercepted tunnel open.
 * Call it once the application's server is configured (onReady), before any tunnel is accepted.
 *
 * Node enforces headersTimeout and requestTimeout only for servers that have emitted
 * `'listening'`: that event starts the server's connection tracking and the timer that checks
 * it (`setupConnectionsTracking` in _http_server.js, registered by an HTTP/2 server with
 * allowHTTP1 too). The endpoint never listens, and Node offers no other way to start them, so
 * the event is emitted here once; nothing else listens for it on this private server. The timer
 * is unref'd and cleared by `server.close()`. HTTP/2 inside a tunnel is not covered by these
 * Node limits (tunnelIdleTimeout and the session timeout are).
 */
export function applyServerLimits (endpoint: Http2SecureServer, appServer: object): void {
  const from = appServer as Record<string, unknown>
  const to = endpoint as unknown as Record<string, unknown>
  for (const limit of COPIED_LIMITS) {
    if (typeof from[limit] === 'number') to[limit] = from[limit]
  }
  endpoint.emit('listening')
}

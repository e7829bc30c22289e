// The two Node internals the in-memory endpoint relies on, and nothing else: handing it a TLS
// connection terminated elsewhere, and starting the request timeouts of a server that never
// listens. Node has no public API for either. Checked on Node 20, 22 and 24;
// test/interception-node-internals.test.ts fails when a Node release changes either.

import type { Http2SecureServer } from 'node:http2'
import type { TLSSocket } from 'node:tls'

/** The state Node keeps on a server-side TLS socket that a TLS server's own connections clear. */
interface ServerTlsSocketInternals {
  secureConnecting: boolean
  _releaseControl?: () => boolean
}

/**
 * Hands `server` a TLS connection whose handshake is done, as its own TLS listener would: the
 * server's `'secureConnection'` starts HTTP/2 or (by ALPN) HTTP/1.1 on it. First it does what a
 * `tls.Server` does for its own connections at that point (`onServerSocketSecure` in Node's TLS
 * wrap), which a socket made with `new TLSSocket(socket, { isServer: true })` never gets:
 * control is released, so a TLS error after the handshake reaches the socket's `'error'` (the
 * HTTP server's listener closes the connection; held back, it would be reported nowhere), and
 * `secureConnecting` is cleared, without which the HTTP/2 session waits for a `'secureConnect'`
 * that only client sockets emit.
 */
export function handOverTlsConnection (server: Http2SecureServer, socket: TLSSocket): void {
  const internals = socket as unknown as ServerTlsSocketInternals
  internals._releaseControl?.()
  internals.secureConnecting = false
  server.emit('secureConnection', socket)
}

/**
 * Starts Node's checks of `headersTimeout` and `requestTimeout` on the server's HTTP/1.1
 * connections. Node starts them when a server emits `'listening'` (`setupConnectionsTracking` in
 * its HTTP server, registered by an HTTP/2 server with allowHTTP1 too): the connection list and
 * an unref'd timer, every `connectionsCheckingInterval` (read now: set it first), cleared by
 * `server.close()`. A server that never listens must emit the event itself; call this once, on
 * a private server where nothing else listens for it.
 */
export function startConnectionChecks (server: Http2SecureServer): void {
  server.emit('listening')
}

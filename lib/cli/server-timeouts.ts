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

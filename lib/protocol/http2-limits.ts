// What one HTTP/2 connection to the proxy may hold at once, on its own listeners and inside
// intercepted tunnels alike.

/**
 * Streams one HTTP/2 connection may have open at once (`SETTINGS_MAX_CONCURRENT_STREAMS`);
 * a stream beyond it never reaches the proxy: nghttp2 refuses it with RST_STREAM REFUSED_STREAM
 * while the client has not acknowledged the setting, and closes the connection (GOAWAY
 * PROTOCOL_ERROR) once it has.
 * Node's default is unlimited, which let one client hold every tunnel slot
 * (`maxConcurrentTunnels`), or every request slot (`maxConcurrentRequests`) inside an
 * intercepted tunnel, on a single connection; 100 is what HTTP/2 recommends as a minimum.
 */
export const HTTP2_MAX_CONCURRENT_STREAMS = 100

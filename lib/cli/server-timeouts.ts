/**
 * Node server timeouts the bundled server sets on every listener.
 * - headersTimeout: a client must finish its request head within 30 s (slow-head attacks).
 * - requestTimeout 0: no deadline on a whole request, so long uploads through the proxy are not cut;
 *   idle uploads are still bounded by the socket timeout below.
 * - keepAliveTimeout: idle keep-alive client connections close after 5 s.
 * - connectionTimeout (socket inactivity): 0 here; tunnels have their own idle timeout and
 *   forwarded requests their activity timeout.
 */
export const SERVER_TIMEOUTS = {
  headersTimeout: 30_000,
  requestTimeout: 0,
  keepAliveTimeout: 5_000
} as const

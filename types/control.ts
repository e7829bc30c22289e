import type { Server as HttpServer } from 'node:http'
import type { Server as HttpsServer } from 'node:https'
import type { Http2SecureServer } from 'node:http2'
import type { AddressInfo } from 'node:net'
import type { ForwardProxyInterceptionAddress, ForwardProxyRequestTransform } from './interception'
import type { ForwardProxyOptions } from './options'
import type { ForwardProxyCaptureStream, ForwardProxyCaptureStreamOptions } from './capture'

/** The `fastify.forwardProxy` decorator: runtime controls of the registered proxy. */
export interface ForwardProxyControl {
  /** CONNECT tunnels open or being opened right now. */
  readonly activeTunnels: number
  /** Forwarded requests (`http://` and inside intercepted tunnels) in flight right now. */
  readonly activeRequests: number
  /**
   * The address of the in-memory interception endpoint (never bound to a port),
   * `'https://forward-proxy-tls-interception'` once tlsInterception is registered, else null.
   */
  readonly interceptionAddress: ForwardProxyInterceptionAddress | null
  /**
   * Serves the proxy (and the application's routes) on another server, e.g. a second listener
   * the application created itself: HTTP/1.1 plain or TLS, or HTTP/2 over TLS (`allowHTTP1`
   * for both protocols). The server's `'request'` events are routed into this Fastify instance
   * and its `'connect'` events open tunnels. The caller listens and closes it.
   */
  attachServer (server: HttpServer | HttpsServer | Http2SecureServer): void
  /**
   * Treats another listener of this process (a metrics or admin port, a health server) as the
   * proxy's own, like the proxy's listeners: a CONNECT or http:// request whose destination
   * address is that listener, under any spelling, gets 508 `proxy_loop_detected`, even where
   * loopback destinations are allowed. Its address is read on every check, so it may start
   * listening later.
   */
  addOwnListener (server: { address (): AddressInfo | string | null }): void
  /**
   * Appends a transform, run after those registered before it, on every forwarded request and
   * response (`http://` forwarding and intercepted tunnels). Call it before the server is ready
   * (e.g. from a plugin).
   * @throws ForwardProxyOptionsError when it has neither transformRequest nor transformResponse
   * function; Error when the server is already ready.
   */
  addTransform (transform: ForwardProxyRequestTransform): void
  /**
   * Replaces the options at run time, given whole as at registration: authentication users or
   * `validate`, destinations, limits, the `transforms` option, secrets, the resolver and
   * `propagateTraceContext` apply to every new request and tunnel at once, and to what is open:
   * the next request inside an intercepted tunnel has the tunnel's user checked again (its
   * credentials against the users or `validate` now in force; a user no longer admitted gets
   * 403 and the tunnel closes), open opaque tunnels whose user or destination is no longer
   * admitted are closed, and pooled connections to destinations are not reused. Requests in
   * flight finish under the settings they began with. Transforms added with `addTransform` or by
   * tlsInterception are kept. Counts (open tunnels, each user's tunnels and request rate)
   * carry over. Fixed at registration: `via`, turning `auth` on or off, `auth.realm`,
   * `auth.failureLimit`, `limits.httpActivityTimeout`, `limits.firstByteTimeout` and
   * `limits.maxStreamResets`.
   * @throws ForwardProxyOptionsError naming the first bad option, or one fixed at registration
   * that differs; nothing has changed then.
   */
  reconfigure (options: ForwardProxyOptions): void
  /**
   * The capture entries completed from now on, for the application (a live view, a queue):
   * redacted like the file, and only while the `capture` option is set (its `hosts` and `users`
   * filters apply). Each call gets its own iterator; one whose consumer falls behind drops
   * entries (counted in its `dropped`) and never slows a request.
   */
  captures (options?: ForwardProxyCaptureStreamOptions): ForwardProxyCaptureStream
}

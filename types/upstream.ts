import type { FastifyRequest } from 'fastify'
import type { ForwardProxyDestination } from './destination'

/**
 * One rule of the `upstreamProxies` option: destinations whose host matches `hosts` go through
 * `url`. The first matching rule wins; no match means direct.
 */
export interface ForwardProxyUpstreamRule {
  /** Host patterns, as in `destinations.allowedHosts` (`*`, `*.corp.example`, ...). */
  readonly hosts: readonly string[]
  /**
   * `direct`, `http://[user:password@]host:port` or `https://[user:password@]host:port`. The
   * credentials are sent to that proxy as Basic `Proxy-Authorization` and never logged.
   */
  readonly url: string
  /**
   * CA certificates (PEM) trusted for an `https://` upstream instead of Node's roots. Rules
   * naming the same upstream (`https://host:port`) must give the same `ca`.
   */
  readonly ca?: string | Buffer
}

/**
 * Chooses the upstream for a destination: an upstream URL as in {@link ForwardProxyUpstreamRule},
 * or `direct` (or null). `request` is the proxy request being served, or null when the proxy
 * opens a pooled connection for requests inside intercepted tunnels (the choice then holds for
 * every request that reuses the connection).
 */
export type ForwardProxyUpstreamSelector = (destination: ForwardProxyDestination, request: FastifyRequest | null) => string | null | Promise<string | null>

import type { Server as HttpServer } from 'node:http'
import type { Server as HttpsServer } from 'node:https'
import type { Http2SecureServer } from 'node:http2'
import type { FastifyInstance } from 'fastify'
import { createConnectListener } from './connect/connect-listener'
import { markConnectionUsed } from './connect/http1-connection'
import { closeSilentConnections } from './first-byte-timeout'
import { limitEarlyStreamResets } from './security/stream-reset-limit'

/** How a server is joined to the proxy. */
export interface AttachOptions {
  /** Also route the server's `'request'` events into Fastify (for servers Fastify did not create). */
  readonly routeRequests: boolean
  /**
   * Milliseconds a client of a plain-text listener may keep a new connection open without
   * sending a byte (`limits.firstByteTimeout`), or null to leave silent connections alone.
   */
  readonly firstByteTimeout: number | null
  /**
   * Streams an HTTP/2 client may reset before they are answered, per connection and 10 s,
   * before its connection is closed (`limits.maxStreamResets`).
   */
  readonly maxStreamResets: number
}

const attached = new WeakSet<object>()

/** A Node server the proxy can be attached to. */
export type ProxyServer = HttpServer | HttpsServer | Http2SecureServer

/**
 * Makes a Node server carry the proxy: an HTTP/1.1 server (plain or TLS), or an HTTP/2 TLS
 * server (with `allowHTTP1`, both protocols). `'connect'` opens tunnels, and every HTTP/1.1
 * request marks its connection as used, so a later CONNECT on it gets 501. A plain-text server's
 * connections that stay silent past `firstByteTimeout` are closed, and an HTTP/2 connection that
 * resets too many streams before their answer is closed. Attaching the same server
 * twice does nothing.
 */
export function attachProxyToServer (server: ProxyServer, fastify: FastifyInstance, pseudonym: string, options: AttachOptions): void {
  if (attached.has(server)) return
  attached.add(server)
  const events = server as HttpServer
  events.on('request', (req, res) => { if (req.httpVersionMajor === 1) markConnectionUsed(req.socket, res) })
  if (options.routeRequests) events.on('request', (req, res) => fastify.routing(req, res))
  events.on('connect', createConnectListener(fastify, pseudonym))
  if (options.firstByteTimeout !== null) closeSilentConnections(server, options.firstByteTimeout)
  limitEarlyStreamResets(server, options.maxStreamResets)
}

/**
 * The extra servers Fastify binds when it listens on a name with several addresses
 * (`localhost`). Fastify keeps them in a private symbol and forwards only `'upgrade'` from
 * them, so without this a CONNECT reaching the IPv6 address would find no listener.
 */
export function secondaryServersOf (fastify: FastifyInstance): ProxyServer[] {
  const symbol = Object.getOwnPropertySymbols(fastify).find((s) => s.description === 'fastify.serverBindings')
  if (symbol === undefined) return []
  const servers = (fastify as unknown as Record<symbol, unknown>)[symbol]
  return Array.isArray(servers) ? servers as ProxyServer[] : []
}

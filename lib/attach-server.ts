import type { Server as HttpServer } from 'node:http'
import type { Server as HttpsServer } from 'node:https'
import type { FastifyInstance } from 'fastify'
import { createHttp1ConnectListener } from './connect/http1-connect-listener'
import { markConnectionUsed } from './connect/http1-connection'

/** How a server is joined to the proxy. */
export interface AttachOptions {
  /** Also route the server's `'request'` events into Fastify (for servers Fastify did not create). */
  readonly routeRequests: boolean
}

const attached = new WeakSet<object>()

/**
 * Makes a Node HTTP/1.1 server (plain or TLS) carry the proxy: `'connect'` opens tunnels and
 * every request marks its connection as used, so a later CONNECT on it gets 501. Attaching the
 * same server twice does nothing.
 */
export function attachProxyToServer (server: HttpServer | HttpsServer, fastify: FastifyInstance, pseudonym: string, options: AttachOptions): void {
  if (attached.has(server)) return
  attached.add(server)
  server.on('request', (req, res) => markConnectionUsed(req.socket, res))
  if (options.routeRequests) server.on('request', (req, res) => fastify.routing(req, res))
  server.on('connect', createHttp1ConnectListener(fastify, pseudonym))
}

/**
 * The extra servers Fastify binds when it listens on a name with several addresses
 * (`localhost`). Fastify keeps them in a private symbol and forwards only `'upgrade'` from
 * them, so without this a CONNECT reaching the IPv6 address would find no listener.
 */
export function secondaryServersOf (fastify: FastifyInstance): Array<HttpServer | HttpsServer> {
  const symbol = Object.getOwnPropertySymbols(fastify).find((s) => s.description === 'fastify.serverBindings')
  if (symbol === undefined) return []
  const servers = (fastify as unknown as Record<symbol, unknown>)[symbol]
  return Array.isArray(servers) ? servers as Array<HttpServer | HttpsServer> : []
}

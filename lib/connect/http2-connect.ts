import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2'
import type { FastifyInstance } from 'fastify'

/**
 * Routes an HTTP/2 CONNECT stream (Node's `'connect'` event of an HTTP/2 server) into Fastify,
 * like any other request, so the application's hooks and the proxy's authentication see it.
 * A tunnel request has no `:path`, so its `url` is its `:authority`, the same `host:port`
 * an HTTP/1.1 CONNECT carries (set on the request object only; the headers stay as received).
 * Extended CONNECT (`:protocol`, e.g. WebSockets over HTTP/2) keeps its `:path` and is left to
 * the application's routes.
 */
export function routeHttp2Connect (fastify: FastifyInstance, req: Http2ServerRequest, res: Http2ServerResponse): void {
  if (req.headers[':protocol'] === undefined) {
    Object.defineProperty(req, 'url', { value: req.authority, writable: true, configurable: true, enumerable: true })
  }
  // The plugin's FastifyInstance is typed for HTTP/1.1; on an HTTP/2 server Fastify routes these types.
  fastify.routing(req as unknown as IncomingMessage, res as unknown as ServerResponse)
}

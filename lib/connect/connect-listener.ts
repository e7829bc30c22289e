import type { IncomingMessage } from 'node:http'
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { createHttp1ConnectListener } from './http1-connect-listener'
import { routeHttp2Connect } from './http2-connect'
import { countConnectRequest } from '../diagnostics/proxy-metrics'

/**
 * Builds the listener for a server's `'connect'` event. Node emits it with
 * `(request, socket, head)` for an HTTP/1.1 CONNECT and with `(request, response)` for an
 * HTTP/2 CONNECT stream on an HTTP/2 server; each goes to its own path. Every tunnel request
 * is counted here (SPEC 6 `forward_proxy.kind=connect`), before the application's hooks,
 * authentication and policy can answer it, so a 403, 407 or 501 counts too.
 */
export function createConnectListener (fastify: FastifyInstance, pseudonym: string) {
  const onHttp1Connect = createHttp1ConnectListener(fastify, pseudonym)
  return function onConnect (req: IncomingMessage | Http2ServerRequest, socketOrResponse: Socket | Http2ServerResponse, head?: Buffer): void {
    if (req.headers[':protocol'] === undefined) countConnectRequest()
    if (req.httpVersionMajor === 2) routeHttp2Connect(fastify, req as Http2ServerRequest, socketOrResponse as Http2ServerResponse)
    else onHttp1Connect(req as IncomingMessage, socketOrResponse as Socket, head ?? Buffer.alloc(0))
  }
}

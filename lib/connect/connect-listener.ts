import type { IncomingMessage } from 'node:http'
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { createHttp1ConnectListener } from './http1-connect-listener'
import { routeHttp2Connect } from './http2-connect'
import { afterEarlierResponses } from './http1-connection'
import { countConnectRequest } from '../diagnostics/proxy-metrics'
import { writeRawProxyError, writeRawResponseError } from '../diagnostics/proxy-response'
import { interceptedTunnelOf } from '../interception/intercepted-tunnels'
import { inTunnelProblemError } from '../interception/in-tunnel-request'

/**
 * Builds the listener for a server's `'connect'` event. Node emits it with
 * `(request, socket, head)` for an HTTP/1.1 CONNECT and with `(request, response)` for an
 * HTTP/2 CONNECT stream on an HTTP/2 server; each goes to its own path. Every tunnel request
 * is counted here (`forward_proxy.requests` with `forward_proxy.kind=connect`), before the application's hooks,
 * authentication and policy can answer it, so a 403, 407 or 501 counts too.
 *
 * The in-memory interception endpoint carries this listener as well. A CONNECT that arrives
 * there came inside an intercepted tunnel: it is not a tunnel request (only origin-form is
 * accepted inside), so it is answered 400 before any hook, never counted as
 * `kind=connect` (the endpoint counts it as a request inside), and never opens a tunnel.
 */
export function createConnectListener (fastify: FastifyInstance, pseudonym: string) {
  const onHttp1Connect = createHttp1ConnectListener(fastify, pseudonym)
  return function onConnect (req: IncomingMessage | Http2ServerRequest, socketOrResponse: Socket | Http2ServerResponse, head?: Buffer): void {
    // Not classified through proxyRequestTargetOf here: that caches, and an HTTP/2 CONNECT
    // gets its url (the :authority) only in routeHttp2Connect.
    if (interceptedTunnelOf(req) !== undefined) {
      const error = inTunnelProblemError(req.headers[':protocol'] === undefined ? 'connect' : 'extended-connect')
      if (req.httpVersionMajor === 2) writeRawResponseError(socketOrResponse as Http2ServerResponse, pseudonym, error)
      else {
        const socket = socketOrResponse as Socket
        afterEarlierResponses(socket, () => writeRawProxyError(socket, pseudonym, error))
      }
      return
    }
    if (req.headers[':protocol'] === undefined) countConnectRequest()
    if (req.httpVersionMajor === 2) routeHttp2Connect(fastify, req as Http2ServerRequest, socketOrResponse as Http2ServerResponse)
    else onHttp1Connect(req as IncomingMessage, socketOrResponse as Socket, head ?? Buffer.alloc(0))
  }
}

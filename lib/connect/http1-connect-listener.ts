import { ServerResponse, type IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { ProxyError } from '../diagnostics/proxy-error'
import { writeRawProxyError } from '../diagnostics/proxy-response'
import { afterEarlierResponses, connectionWasUsed, rememberHttp1Connect } from './http1-connection'
import { lingeringClose } from './lingering-close'
import { watchPendingConnect } from './pending-connect'

/**
 * Builds the listener for a Node HTTP/1.1 server's `'connect'` event. A CONNECT that is not the
 * first request on its connection gets 501 (after any earlier pipelined responses, to keep
 * response order) and the connection closes. Otherwise the CONNECT is routed into
 * Fastify with a response bound to its socket, so the application's hooks, authentication and
 * the proxy route handle it like any other request; whatever answer it gets other than a tunnel
 * closes the connection without parsing the bytes that follow. Until it is answered the
 * connection is watched, so a client that leaves first gets nothing dialed for it.
 */
export function createHttp1ConnectListener (fastify: FastifyInstance, pseudonym: string) {
  return function onConnect (req: IncomingMessage, socket: Socket, head: Buffer): void {
    socket.on('error', (error) => fastify.log.debug({ err: { code: (error as NodeJS.ErrnoException).code } }, 'CONNECT client socket error'))
    if (connectionWasUsed(socket)) {
      afterEarlierResponses(socket, () => writeRawProxyError(socket, pseudonym, new ProxyError('http_request_error', 'CONNECT must be the first request on a connection.', { status: 501, details: 'CONNECT after another request' })))
      return
    }
    const response = new ServerResponse(req)
    response.shouldKeepAlive = false
    response.assignSocket(socket)
    response.once('finish', () => lingeringClose(socket))
    rememberHttp1Connect(req, { socket, pending: watchPendingConnect(socket, head), response })
    fastify.routing(req, response)
  }
}

import { ServerResponse, type IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { afterEarlierResponses } from '../connect/http1-connection'
import { lingeringClose } from '../connect/lingering-close'
import { countInterceptedRequest } from '../diagnostics/proxy-metrics'
import { writeRawProxyError } from '../diagnostics/proxy-response'
import { proxyRequestTargetOf } from '../proxy-request'
import { inTunnelProblemError } from './in-tunnel-request'

/** The client side of an HTTP/1.1 upgrade request inside an intercepted tunnel. */
export interface InTunnelUpgrade {
  /** The tunnel's decrypted connection; after this request it carries nothing else. */
  readonly socket: Socket
  /** Bytes the client sent after the request head (e.g. early WebSocket frames): held until a 101. */
  readonly head: Buffer
}

const upgrades = new WeakMap<IncomingMessage, InTunnelUpgrade>()

/** The upgrade context of a raw request, or undefined when it is not an in-tunnel upgrade request. */
export function inTunnelUpgradeOf (req: object): InTunnelUpgrade | undefined {
  return upgrades.get(req as IncomingMessage)
}

/**
 * Builds the in-memory endpoint's `'upgrade'` listener, for upgrades inside intercepted tunnels. Node hands an HTTP/1.1
 * request with `Connection: upgrade` over with the connection, no longer parsed; it is routed into
 * Fastify like any request inside the tunnel (the app's hooks see it), with a response bound to
 * the connection (as the HTTP/1.1 CONNECT listener does) and the connection and early bytes kept
 * for the proxy route. Whatever answer it gets other than a 101 closes the connection without
 * parsing (or forwarding) the bytes the client sent after the head. It waits for
 * responses still being written for earlier requests on the connection, to keep their order.
 */
export function createInTunnelUpgradeListener (fastify: FastifyInstance, pseudonym: string) {
  return function onUpgrade (req: IncomingMessage, socket: Socket, head: Buffer): void {
    countInterceptedRequest()
    socket.on('error', () => {})
    afterEarlierResponses(socket, () => {
      const target = proxyRequestTargetOf(req)
      if (target?.kind === 'intercepted' && target.problem !== null) {
        writeRawProxyError(socket, pseudonym, inTunnelProblemError(target.problem))
        return
      }
      const response = new ServerResponse(req)
      response.shouldKeepAlive = false
      response.assignSocket(socket)
      response.once('finish', () => lingeringClose(socket))
      upgrades.set(req, { socket, head })
      fastify.routing(req, response)
    })
  }
}

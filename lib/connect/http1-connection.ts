import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

/** The raw pieces of an HTTP/1.1 CONNECT that Node hands over in its `'connect'` event. */
export interface Http1ConnectContext {
  readonly socket: Socket
  /** Bytes the client sent after the CONNECT head (e.g. an early ClientHello). */
  readonly head: Buffer
  readonly response: ServerResponse
}

const connectContexts = new WeakMap<IncomingMessage, Http1ConnectContext>()
const socketsWithRequests = new WeakSet<Socket>()

/** Remembers the socket and early bytes of an HTTP/1.1 CONNECT until its handler runs. */
export function rememberHttp1Connect (req: IncomingMessage, context: Http1ConnectContext): void {
  connectContexts.set(req, context)
}

/** The HTTP/1.1 CONNECT context of a raw request, or undefined (HTTP/2, or not a CONNECT). */
export function http1ConnectContextOf (req: object): Http1ConnectContext | undefined {
  return connectContexts.get(req as IncomingMessage)
}

/** Records that a connection has carried a request, so a later CONNECT on it gets 501 (SPEC 4.1.1). */
export function markConnectionUsed (socket: Socket): void {
  socketsWithRequests.add(socket)
}

/** True when an earlier request was already served on this connection. */
export function connectionWasUsed (socket: Socket): boolean {
  return socketsWithRequests.has(socket)
}

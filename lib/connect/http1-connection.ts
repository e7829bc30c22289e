import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { PendingConnect } from './pending-connect'

/** The raw pieces of an HTTP/1.1 CONNECT that Node hands over in its `'connect'` event. */
export interface Http1ConnectContext {
  readonly socket: Socket
  /** The connection until the CONNECT is answered, with the bytes the client sent after its head (e.g. an early ClientHello). */
  readonly pending: PendingConnect
  readonly response: ServerResponse
}

const connectContexts = new WeakMap<IncomingMessage, Http1ConnectContext>()

/** Per connection that has carried a request: responses not yet finished, and who waits for them. */
interface ConnectionUse {
  pending: number
  readonly whenIdle: Array<() => void>
}

const usedConnections = new WeakMap<Socket, ConnectionUse>()

/** Remembers the socket and early bytes of an HTTP/1.1 CONNECT until its handler runs. */
export function rememberHttp1Connect (req: IncomingMessage, context: Http1ConnectContext): void {
  connectContexts.set(req, context)
}

/** The HTTP/1.1 CONNECT context of a raw request, or undefined (HTTP/2, or not a CONNECT). */
export function http1ConnectContextOf (req: object): Http1ConnectContext | undefined {
  return connectContexts.get(req as IncomingMessage)
}

/**
 * Records that a connection carries a request (so a later CONNECT on it gets 501: CONNECT must come first)
 * and tracks its response until it closes, so that 501 is not written ahead of it.
 */
export function markConnectionUsed (socket: Socket, response: ServerResponse): void {
  let use = usedConnections.get(socket)
  if (use === undefined) {
    use = { pending: 0, whenIdle: [] }
    usedConnections.set(socket, use)
  }
  const tracked = use
  tracked.pending++
  response.once('close', () => {
    tracked.pending--
    if (tracked.pending === 0) for (const callback of tracked.whenIdle.splice(0)) callback()
  })
}

/** True when an earlier request was already served on this connection. */
export function connectionWasUsed (socket: Socket): boolean {
  return usedConnections.has(socket)
}

/**
 * Runs `callback` once every earlier response on the connection has finished (at once if none
 * is pending), so an answer to a pipelined CONNECT keeps HTTP/1.1 response order.
 */
export function afterEarlierResponses (socket: Socket, callback: () => void): void {
  const use = usedConnections.get(socket)
  if (use === undefined || use.pending === 0) callback()
  else use.whenIdle.push(callback)
}

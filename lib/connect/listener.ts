// How a server's connections are joined to the proxy: its CONNECT event over HTTP/1.1 and HTTP/2,
// early bytes and lingering close, the first-byte timeout and the early stream-reset limit.

import { type Server as HttpServer, type IncomingMessage, ServerResponse } from 'node:http'
import type { Server as HttpsServer } from 'node:https'
import {
  type Http2SecureServer,
  type Http2ServerRequest,
  type Http2ServerResponse,
  constants,
  type ServerHttp2Session,
  type ServerHttp2Stream
} from 'node:http2'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import type { Socket } from 'node:net'
import { Server as TlsServer } from 'node:tls'
import type { EventEmitter } from 'node:events'
import { countConnectRequest } from '../telemetry/metrics'
import { finishRefusedInTunnel } from '../telemetry/request-telemetry'
import { writeRawProxyError, writeRawResponseError } from '../protocol/error-responses'
import { interceptedTunnelOf, inTunnelProblemError, proxyRequestTargetOf, routeUnderConnectPath } from '../core/proxy-request'
import { answerUnmetExpectations } from '../protocol/unmet-expectation'
import { ProxyError } from '../protocol/errors'
import { ObjectSlot } from '../protocol/object-slot'
import { tunnelSetups } from './tunnel-setups'
import type { ClientReading } from './relay'

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
 * resets too many streams before their answer is closed, and an unmet `Expect` gets the
 * proxy's 417. Attaching the same server twice does nothing.
 */
export function attachProxyToServer (server: ProxyServer, fastify: FastifyInstance, pseudonym: string, options: AttachOptions): void {
  if (attached.has(server)) return
  attached.add(server)
  const events = server as HttpServer
  events.on('request', (req, res) => { if (req.httpVersionMajor === 1) markConnectionUsed(req.socket, res) })
  if (options.routeRequests) events.on('request', (req, res) => fastify.routing(req, res))
  events.on('connect', createConnectListener(fastify, pseudonym))
  answerUnmetExpectations(events, pseudonym, (req) => proxyRequestTargetOf(req) !== null)
  if (options.firstByteTimeout !== null) closeSilentConnections(server, options.firstByteTimeout)
  limitEarlyStreamResets(server, options.maxStreamResets, fastify.log)
}

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
function createConnectListener (fastify: FastifyInstance, pseudonym: string) {
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
      finishRefusedInTunnel(fastify.log, req, error)
      return
    }
    if (req.headers[':protocol'] === undefined) countConnectRequest()
    if (req.httpVersionMajor === 2) routeHttp2Connect(fastify, req as Http2ServerRequest, socketOrResponse as Http2ServerResponse)
    else onHttp1Connect(req as IncomingMessage, socketOrResponse as Socket, head ?? Buffer.alloc(0))
  }
}

/**
 * Builds the listener for a Node HTTP/1.1 server's `'connect'` event. A CONNECT that is not the
 * first request on its connection gets 501 (after any earlier pipelined responses, to keep
 * response order) and the connection closes. Otherwise the CONNECT is routed into
 * Fastify with a response bound to its socket, so the application's hooks, authentication and
 * the proxy route handle it like any other request; whatever answer it gets other than a tunnel
 * closes the connection without parsing the bytes that follow. Until it is answered the
 * connection is watched, so a client that leaves first gets nothing dialed for it.
 */
function createHttp1ConnectListener (fastify: FastifyInstance, pseudonym: string) {
  // One listener for every CONNECT's socket, not a closure each.
  const onClientError = (error: Error): void => fastify.log.debug({ err: { code: (error as NodeJS.ErrnoException).code } }, 'CONNECT client socket error')
  return function onConnect (req: IncomingMessage, socket: Socket, head: Buffer): void {
    socket.on('error', onClientError)
    if (connectionWasUsed(socket)) {
      afterEarlierResponses(socket, () => writeRawProxyError(socket, pseudonym, new ProxyError('http_request_error', 'CONNECT must be the first request on a connection.', { status: 501, details: 'CONNECT after another request' })))
      return
    }
    const response = new ServerResponse(req)
    response.shouldKeepAlive = false
    response.assignSocket(socket)
    response.once('finish', () => {
      // Answered without a tunnel: no longer being set up (see admitConnect).
      tunnelSetups.end(socket)
      lingeringClose(socket)
    })
    rememberHttp1Connect(req, { socket, pending: watchPendingConnect(socket, head), response })
    routeUnderConnectPath(req)
    fastify.routing(req, response)
  }
}

/**
 * Routes an HTTP/2 CONNECT stream (Node's `'connect'` event of an HTTP/2 server) into Fastify,
 * like any other request, so the application's hooks and the proxy's authentication see it.
 * A tunnel request has no `:path`: its target is its `:authority`, the same `host:port` an
 * HTTP/1.1 CONNECT carries (set on the request object only; the headers stay as received), and
 * it is routed like one. Extended CONNECT (`:protocol`, e.g. WebSockets over HTTP/2) keeps its
 * `:path` and is left to the application's routes.
 */
function routeHttp2Connect (fastify: FastifyInstance, req: Http2ServerRequest, res: Http2ServerResponse): void {
  if (req.headers[':protocol'] === undefined) {
    Object.defineProperty(req, 'url', { value: req.authority, writable: true, configurable: true, enumerable: true })
    routeUnderConnectPath(req)
  }
  // The plugin's FastifyInstance is typed for HTTP/1.1; on an HTTP/2 server Fastify routes these types.
  fastify.routing(req as unknown as IncomingMessage, res as unknown as ServerResponse)
}

/** The raw pieces of an HTTP/1.1 CONNECT that Node hands over in its `'connect'` event. */
export interface Http1ConnectContext {
  readonly socket: Socket
  /** The connection until the CONNECT is answered, with the bytes the client sent after its head (e.g. an early ClientHello). */
  readonly pending: PendingConnect
  readonly response: ServerResponse
}

const connectContexts = new ObjectSlot<Http1ConnectContext>('connectContext')

/** Per connection that has carried a request: responses not yet finished, and who waits for them. */
interface ConnectionUse {
  pending: number
  readonly whenIdle: Array<() => void>
}

const usedConnections = new ObjectSlot<ConnectionUse>('connectionUse')

/** Remembers the socket and early bytes of an HTTP/1.1 CONNECT until its handler runs. */
function rememberHttp1Connect (req: IncomingMessage, context: Http1ConnectContext): void {
  connectContexts.set(req, context)
}

/** The HTTP/1.1 CONNECT context of a raw request, or undefined (HTTP/2, or not a CONNECT). */
export function http1ConnectContextOf (req: object): Http1ConnectContext | undefined {
  return connectContexts.get(req)
}

/**
 * Records that a connection carries a request (so a later CONNECT on it gets 501: CONNECT must come first)
 * and tracks its response until it closes, so that 501 is not written ahead of it.
 */
function markConnectionUsed (socket: Socket, response: ServerResponse): void {
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
function connectionWasUsed (socket: Socket): boolean {
  return usedConnections.get(socket) !== undefined
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

/**
 * Most bytes kept from a client that sends before its CONNECT is answered. Past this the socket
 * is paused: the client waits (TCP backpressure), and its end is no longer seen until the answer.
 */
const MAX_EARLY_BYTES = 64 * 1024

/** An HTTP/1.1 CONNECT's connection between its head and the proxy's answer. */
interface PendingConnect extends ClientReading {
  /**
   * Stops watching, pauses the socket for whoever reads it next and returns every byte the
   * client sent after its CONNECT head: Node's own `head` first, then what was read meanwhile.
   */
  takeEarlyBytes (): Buffer
}

/**
 * Reads a CONNECT's connection until the proxy answers, so that a client that gives up is seen
 * at once. A client that ends its sending side (FIN) or resets before its answer has left: its
 * connection is destroyed, which aborts any credential check, DNS lookup or dial still waiting for
 * it, and nothing is dialed for it. Go's Transport, for one, abandons spare CONNECTs it no longer
 * needs, and a proxy that dialed them anyway would do its most work when it is most loaded.
 * Like Squid (`half_closed_clients off`), a half-close is not told apart from a close here; once
 * the tunnel is established a half-close is carried across as usual.
 *
 * Without this, Node leaves the socket unread after its `'connect'` event and the FIN waits in
 * the socket's buffer, unseen, until the tunnel starts reading.
 *
 * An opaque tunnel's relay takes these listeners over (`handOver`) rather than adding its own:
 * the socket is read from the head to the tunnel's end without being paused, resumed or having
 * its listeners changed in between, which every CONNECT paid for.
 */
function watchPendingConnect (socket: Socket, head: Buffer): PendingConnect {
  let early: Buffer[] = head.length > 0 ? [head] : []
  let earlyLength = head.length
  let relayChunk: ((chunk: Buffer) => void) | null = null
  let relayEnd: (() => void) | null = null
  const onData = (chunk: Buffer): void => {
    if (relayChunk !== null) {
      relayChunk(chunk)
      return
    }
    early.push(chunk)
    earlyLength += chunk.length
    if (earlyLength >= MAX_EARLY_BYTES) socket.pause()
  }
  const onEnd = (): void => {
    if (relayEnd !== null) relayEnd()
    else socket.destroy()
  }
  socket.on('data', onData)
  socket.on('end', onEnd)
  const takeAll = (): Buffer => {
    const bytes = early.length === 1 ? early[0] as Buffer : Buffer.concat(early, earlyLength)
    early = []
    earlyLength = 0
    return bytes
  }
  return {
    takeEarlyBytes () {
      socket.removeListener('data', onData)
      socket.removeListener('end', onEnd)
      socket.pause()
      return takeAll()
    },
    handOver (onChunk, onClientEnd) {
      relayChunk = onChunk
      relayEnd = onClientEnd
      return takeAll()
    }
  }
}

/** Longest time a refused CONNECT's connection keeps draining the client's bytes after the answer. */
export const LINGER_TIMEOUT_MS = 2000

/**
 * Closes a connection whose CONNECT was answered with an error, after the answer is written:
 * sends FIN, then reads and discards (never parses) whatever the client still sends until it
 * closes or `lingerMs` passes. Closing with unread bytes would make the kernel send a TCP RST,
 * which can destroy the error response before the client reads it (RFC 9112 section 9.6).
 */
export function lingeringClose (socket: Socket, lingerMs = LINGER_TIMEOUT_MS): void {
  if (socket.destroyed) return
  const timer = setTimeout(() => socket.destroy(), lingerMs)
  timer.unref()
  socket.once('close', () => clearTimeout(timer))
  socket.once('end', () => socket.destroy())
  socket.removeAllListeners('data')
  socket.on('data', () => {})
  // Paused while the CONNECT waited (early bytes past their bound): drain from here on.
  socket.resume()
  socket.end()
}

/**
 * Closes every plain-text connection of `server` on which the client has sent no byte within
 * `timeout` ms of opening it. Node's `headersTimeout` starts counting only at the first byte and
 * its keep-alive timer only after a response, so without this a client could hold a connection
 * (and a descriptor) for ever by opening it and saying nothing. A connection that has sent
 * anything is left to those timers and to the tunnel idle timeout. TLS servers are skipped:
 * their `handshakeTimeout` already bounds a silent client.
 */
function closeSilentConnections (server: ProxyServer, timeout: number): void {
  if (server instanceof TlsServer) return
  server.on('connection', (socket: Socket) => {
    const timer = setTimeout(() => {
      // The byte counter of the socket's handle, so reads the HTTP parser takes directly from
      // the handle (never emitted as 'data') count too.
      if (socket.bytesRead === 0) socket.destroy()
    }, timeout)
    timer.unref()
    socket.on('close', () => clearTimeout(timer))
  })
}

/** The window over which a connection's early stream resets are counted. */
const STREAM_RESET_WINDOW_MS = 10_000

const TOO_MANY_RESETS = 'fastify-forward-proxy: too many streams reset before their answer'

/**
 * Closes an HTTP/2 client connection that resets more than `maxResets` streams before the proxy
 * answered them within {@link STREAM_RESET_WINDOW_MS}, with GOAWAY `ENHANCE_YOUR_CALM` (the
 * "rapid reset" attack: every stream costs authentication, routing and policy work that the
 * client never waits for, and the stream limit never fills because each stream is gone at
 * once). A stream reset after its response head was sent is a client changing its mind, not
 * counted. `server` is any server that emits `'session'`; others are left alone. Each such close
 * is logged once, at warn, with the client's address (the tunnel's client inside interception).
 */
function limitEarlyStreamResets (server: EventEmitter, maxResets: number, log: FastifyBaseLogger): void {
  server.on('session', (session: ServerHttp2Session) => {
    let windowStart = 0
    let resets = 0
    let closing = false
    const onStreamClosed = (stream: ServerHttp2Stream): void => {
      if (stream.headersSent || stream.rstCode === constants.NGHTTP2_NO_ERROR || closing) return
      const now = Date.now()
      if (now - windowStart > STREAM_RESET_WINDOW_MS) {
        windowStart = now
        resets = 0
      }
      resets++
      if (resets <= maxResets) return
      closing = true
      const client = interceptedTunnelOf({ stream: { session } })?.clientAddress ?? session.socket?.remoteAddress ?? null
      log.warn({ http2: { client, resets, windowMs: STREAM_RESET_WINDOW_MS } }, 'HTTP/2 connection closed (GOAWAY ENHANCE_YOUR_CALM): too many streams reset before their answer (rapid reset, limits.maxStreamResets)')
      // Not from inside this callback: while nghttp2 is still reading the frames of the same
      // chunk, the GOAWAY would not be written and the socket would stay open. The code goes
      // with an error (Node's server listens for session errors): without one it becomes NO_ERROR.
      setImmediate(() => {
        if (!session.destroyed) session.destroy(new Error(TOO_MANY_RESETS), constants.NGHTTP2_ENHANCE_YOUR_CALM)
      })
    }
    session.on('stream', (stream: ServerHttp2Stream) => {
      // HEADERS and RST_STREAM read in one chunk: the stream may be closed before this event.
      if (stream.closed) onStreamClosed(stream)
      else stream.once('close', () => onStreamClosed(stream))
    })
  })
}

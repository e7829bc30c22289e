// The in-memory interception endpoint: takes over tunnels chosen for interception, serves the
// requests inside them through the proxy route, and answers those a tunnel cannot carry.

import { type IncomingMessage, ServerResponse } from 'node:http'
import {
  createSecureServer,
  type Http2SecureServer,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type Http2Session
} from 'node:http2'
import type { TLSSocket } from 'node:tls'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Socket } from 'node:net'
import type { ForwardProxyClientProtocols } from '../../types/interception'
import type { ForwardProxyDestination } from '../../types/destination'
import { attachProxyToServer, afterEarlierResponses, lingeringClose } from '../connect/listener'
import { tunnelSetups } from '../connect/tunnel-setups'
import { countInterceptedRequest, recordClientRefusalPassthrough } from '../telemetry/metrics'
import { finishRefusedInTunnel } from '../telemetry/request-telemetry'
import {
  writeRawResponseError,
  createProxyClientErrorHandler,
  writeRawProxyError
} from '../protocol/error-responses'
import {
  proxyRequestTargetOf,
  interceptedTunnelOf,
  inTunnelProblemError,
  rememberInterceptedConnection,
  type InterceptedTunnel,
  type InterceptedRequestTarget
} from '../core/proxy-request'
import { terminateTls } from './tls-termination'
import { TunnelTransport, SocketTransport } from './client-transports'
import { handOverTlsConnection, startConnectionChecks } from './node-server-internals'
import {
  type ClientTransport,
  type InterceptedStream,
  type ProxyRuntime,
  type ClientRefusalPolicy,
  type TunnelClientIdentity,
  AcceptedTunnel
} from '../core/runtime'
import { forwardRequest } from '../forward/forward-handler'
import { isWebSocketUpgrade, upgradeRequestHasBody } from '../forward/websocket-upgrade'
import { ProxyError } from '../protocol/errors'
import { ObjectSlot } from '../protocol/object-slot'
import { HTTP2_MAX_CONCURRENT_STREAMS } from '../protocol/http2-limits'

/** The address the in-memory endpoint is listed under (it is never bound to a port). */
export const INTERCEPTION_ADDRESS = 'https://forward-proxy-tls-interception'

// Whose refusals are counted, when none are (no passthroughOnClientRefusal).
const NO_IDENTITY: TunnelClientIdentity = Object.freeze({ user: null, address: undefined })

/** Settings of the endpoint. */
export interface EndpointSettings {
  readonly clientProtocols: ForwardProxyClientProtocols
  readonly handshakeTimeout: number
  /** The proxy's pseudonym, for the answers it makes on the endpoint. */
  readonly pseudonym: string
  /** Streams a client may reset before their answer, per connection and 10 s (`limits.maxStreamResets`). */
  readonly maxStreamResets: number
  /** With `passthroughOnClientRefusal`: where clients' refusals of the certificate are counted. */
  readonly clientRefusals: ClientRefusalPolicy | null
  /** Why a destination must stay intercepted whatever its clients refuse (a secret, a header rule), or null. */
  readonly keepsInterception: (destination: ForwardProxyDestination) => string | null
}

/**
 * The in-memory interception endpoint: an HTTP/2 TLS server (HTTP/1.1 too,
 * per clientProtocols) that is never bound to a port. Each intercepted tunnel gets its TLS
 * terminated with the provider's certificate for the CONNECT target and is then handed to
 * this server as a connection, and the server's requests are routed into the same Fastify
 * instance as the proxy's own: the application's hooks and the proxy route run for them.
 * Requests the tunnel cannot carry (421, 400) are answered before they reach Fastify.
 */
export class InterceptionEndpoint {
  readonly #server: Http2SecureServer
  readonly #settings: EndpointSettings
  readonly #alpnProtocols: readonly string[]
  /** The connection being handed to the server, for its `'session'` listener. */
  #injecting: { readonly socket: TLSSocket, readonly tunnel: InterceptedTunnel } | null = null

  constructor (fastify: FastifyInstance, settings: EndpointSettings) {
    this.#settings = settings
    const { clientProtocols } = settings
    this.#alpnProtocols = clientProtocols === 'http1' ? ['http/1.1'] : clientProtocols === 'http2' ? ['h2'] : ['h2', 'http/1.1']
    this.#server = createSecureServer({
      allowHTTP1: clientProtocols !== 'http2',
      // An HTTP/1.1 request without Host gets the proxy's 400 (with Proxy-Status, logged),
      // not Node's bare one: the request listener refuses it as it does an HTTP/1.0 one.
      // (Node reads it for HTTP/1.1 connections, though its HTTP/2 types do not list it.)
      ...{ requireHostHeader: false },
      // Advertised so that a client attempting WebSockets over HTTP/2 gets a 400
      // rather than a protocol error.
      settings: { enableConnectProtocol: true, maxConcurrentStreams: HTTP2_MAX_CONCURRENT_STREAMS }
    })
    // HTTP/1.1 heads Node's parser refuses or that time out (408) get the proxy's answer.
    this.#server.on('clientError', createProxyClientErrorHandler(settings.pseudonym))
    fastify.addHook('onReady', async () => applyServerLimits(this.#server, fastify.server))
    fastify.addHook('onClose', async () => { this.#server.close() })
    this.#server.on('session', (session: Http2Session) => {
      session.on('error', () => {})
      if (this.#injecting === null) return
      rememberInterceptedConnection(session, this.#injecting.tunnel)
      closeWhenClientEnds(session, this.#injecting.socket)
    })
    this.#server.on('connect', countInterceptedRequest)
    attachProxyToServer(this.#server, fastify, settings.pseudonym, { routeRequests: false, firstByteTimeout: null, maxStreamResets: settings.maxStreamResets })
    this.#server.on('upgrade', createInTunnelUpgradeListener(fastify, settings.pseudonym))
    this.#server.on('request', (req: Http2ServerRequest | IncomingMessage, res: Http2ServerResponse | ServerResponse) => {
      countInterceptedRequest()
      // A misdirected or malformed request is refused before any hook could act on it as a
      // request for the tunnel's destination.
      const target = proxyRequestTargetOf(req)
      if (target?.kind === 'intercepted' && target.problem !== null) {
        const error = inTunnelProblemError(target.problem)
        writeRawResponseError(res, settings.pseudonym, error)
        finishRefusedInTunnel(fastify.log, req, error)
        return
      }
      fastify.routing(req as IncomingMessage, res as ServerResponse)
    })
  }

  /**
   * Takes over an intercepted tunnel: TLS with the client, then its requests through Fastify.
   * Everything after this call is reported through `tunnel.onClose`; it never throws.
   */
  accept (tunnel: AcceptedTunnel): void {
    const { client } = tunnel
    const transport: ClientTransport = client.kind === 'connection'
      ? new SocketTransport(client, tunnel.idleTimeout)
      : quietTunnelTransport(client, tunnel.idleTimeout)
    transport.once('close', () => tunnel.onClose(transport.summary))
    const state: InterceptedTunnel = {
      interception: Object.freeze({ destination: tunnel.destination }),
      grant: tunnel.grant,
      clientAddress: tunnel.clientAddress,
      traceContext: tunnel.traceContext
    }
    const refusals = this.#settings.clientRefusals
    const identity: TunnelClientIdentity = refusals === null ? NO_IDENTITY : { user: tunnel.grant.user?.name ?? null, address: tunnel.clientAddress }
    void terminateTls({
      transport,
      destination: tunnel.destination,
      provider: tunnel.provider,
      handshakeTimeout: this.#settings.handshakeTimeout,
      alpnProtocols: this.#alpnProtocols,
      server: this.#server,
      log: tunnel.log,
      ...(refusals === null
        ? {}
        : {
            onClientRefusal: () => this.#clientRefused(refusals, identity, tunnel),
            onHandshake: () => refusals.accepted(identity, tunnel.destination)
          })
    }).then((socket) => {
      if (client.kind === 'connection') tunnelSetups.end(client.socket)
      if (socket !== null) this.#inject(socket, state)
    })
  }

  /**
   * Counts a refusal of the proxy's certificate; when it completes a run of them, the user's
   * tunnels to the host are relayed opaquely for a while (one log line, one count), unless the
   * host must stay intercepted (then the line says why and the count starts again).
   */
  #clientRefused (refusals: ClientRefusalPolicy, identity: TunnelClientIdentity, tunnel: AcceptedTunnel): void {
    const { destination } = tunnel
    if (!refusals.refused(identity, destination)) return
    const about = { tunnel: { destination: `${destination.host}:${destination.port}`, user: identity.user, client: identity.address } }
    const kept = this.#settings.keepsInterception(destination)
    if (kept !== null) {
      refusals.accepted(identity, destination)
      tunnel.log.warn({ ...about, reason: kept }, `clients keep refusing the proxy's certificate for this host; it stays intercepted: ${kept}`)
      return
    }
    recordClientRefusalPassthrough()
    tunnel.log.warn(about, 'clients keep refusing the proxy\'s certificate for this host: its tunnels are relayed opaquely for a while (passthroughOnClientRefusal)')
  }

  /**
   * Hands a terminated TLS connection to the HTTP server, as its TLS listener would (see
   * `handOverTlsConnection`), with the tunnel's state remembered on it and, for the
   * `'session'` listener, on the HTTP/2 session it starts.
   */
  #inject (socket: TLSSocket, tunnel: InterceptedTunnel): void {
    rememberInterceptedConnection(socket, tunnel)
    this.#injecting = { socket, tunnel }
    try {
      handOverTlsConnection(this.#server, socket)
    } finally {
      this.#injecting = null
    }
  }
}

/**
 * Closes an intercepted HTTP/2 connection as soon as its client ends its side (TLS close_notify
 * or TCP FIN): its open streams are reset and what they forward is aborted, as Go's HTTP/2
 * server does for a client that disconnects (and Node's HTTP/1.1 server for a client that ends
 * its side). Such a client sends no more frames, not even the WINDOW_UPDATE a response larger
 * than its window needs.
 *
 * Neither Node's HTTP/2 session (it ignores the end of its socket's input) nor its graceful
 * close can be relied on here. A client that resets its connection right after its close_notify
 * (Go's Transport discarding a spare connection: close_notify, then a close with the proxy's
 * session ticket unread) makes the proxy's next write fail, and Node 20's TLS layer keeps that
 * write pending for ever without reporting an error: the session then waits for it, its streams
 * never finish, and the tunnel and its slots would be held until the idle timeout. Destroying
 * the TLS socket closes the tunnel's connection under it.
 */
function closeWhenClientEnds (session: Http2Session, socket: TLSSocket): void {
  socket.once('end', () => {
    // A GOAWAY if the connection still takes it; the socket is closed either way.
    session.destroy()
    socket.destroy()
  })
}

/** A stream transport whose errors end in its close, which is all the tunnel reports. */
function quietTunnelTransport (client: InterceptedStream, idleTimeout: number): TunnelTransport {
  const transport = new TunnelTransport(client, idleTimeout)
  transport.on('error', () => {})
  return transport
}

// Node HTTP server limits copied from the application's server, so intercepted requests get them
// too. connectionsCheckingInterval is how often Node looks for heads and requests over time.
const COPIED_LIMITS = [
  'keepAliveTimeout', 'headersTimeout', 'requestTimeout', 'maxHeadersCount', 'maxRequestsPerSocket',
  'connectionsCheckingInterval'
] as const

/**
 * Gives the in-memory endpoint the application server's HTTP/1.1 limits: idle
 * keep-alive connections close after keepAliveTimeout, and a request head that takes longer than
 * headersTimeout (or a request longer than requestTimeout) is answered 408 and its connection
 * closed, so a client trickling its head byte by byte cannot hold an intercepted tunnel open.
 * Call it once the application's server is configured (onReady), before any tunnel is accepted.
 * Node enforces headersTimeout and requestTimeout only once a server has emitted `'listening'`,
 * which the endpoint never does (see `startConnectionChecks`). HTTP/2 inside a tunnel is not
 * covered by these Node limits (tunnelIdleTimeout and the session timeout are).
 */
function applyServerLimits (endpoint: Http2SecureServer, appServer: object): void {
  const from = appServer as Record<string, unknown>
  const to = endpoint as unknown as Record<string, unknown>
  for (const limit of COPIED_LIMITS) {
    if (typeof from[limit] === 'number') to[limit] = from[limit]
  }
  startConnectionChecks(endpoint)
}

/** The client side of an HTTP/1.1 upgrade request inside an intercepted tunnel. */
export interface InTunnelUpgrade {
  /** The tunnel's decrypted connection; after this request it carries nothing else. */
  readonly socket: Socket
  /** Bytes the client sent after the request head (e.g. early WebSocket frames): held until a 101. */
  readonly head: Buffer
  /**
   * True for a WebSocket opening handshake without a body: relayed by the proxy route. Any other
   * upgrade (h2c, say) is forwarded as an ordinary request with `Upgrade` removed.
   */
  readonly websocket: boolean
  /**
   * True when the head announces a body, which Node leaves unparsed after an upgrade request's
   * head: such a request is refused with 400.
   */
  readonly announcesBody: boolean
}

const upgrades = new ObjectSlot<InTunnelUpgrade>('inTunnelUpgrade')

/** The upgrade context of a raw request, or undefined when it is not an in-tunnel upgrade request. */
export function inTunnelUpgradeOf (req: object): InTunnelUpgrade | undefined {
  return upgrades.get(req)
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
function createInTunnelUpgradeListener (fastify: FastifyInstance, pseudonym: string) {
  return function onUpgrade (req: IncomingMessage, socket: Socket, head: Buffer): void {
    countInterceptedRequest()
    socket.on('error', () => {})
    afterEarlierResponses(socket, () => {
      const target = proxyRequestTargetOf(req)
      if (target?.kind === 'intercepted' && target.problem !== null) {
        const error = inTunnelProblemError(target.problem)
        writeRawProxyError(socket, pseudonym, error)
        finishRefusedInTunnel(fastify.log, req, error)
        return
      }
      const response = new ServerResponse(req)
      response.shouldKeepAlive = false
      response.assignSocket(socket)
      response.once('finish', () => lingeringClose(socket))
      // Judged on the head as received, before the application's hooks run.
      const announcesBody = upgradeRequestHasBody(req.headers)
      const websocket = !announcesBody && isWebSocketUpgrade(req.method ?? '', req.httpVersion, req.headers)
      upgrades.set(req, { socket, head, websocket, announcesBody })
      fastify.routing(req, response)
    })
  }
}

/**
 * Handles a request inside an intercepted tunnel: refused (400, or 421 when it
 * names another host) unless it is an origin-form request for the tunnel's own destination;
 * otherwise sent to `https://<host>:<port>` over HTTP/1.1 with validated TLS, Max-Forwards
 * untouched. It was authorized when the tunnel opened and is not authorized again.
 *
 * While another of the client's tunnels to the same destination is being set up (its CONNECT not
 * yet answered, or its TLS handshake not yet done), the request waits for it,
 * `limits.tunnelSetupWait` at most: a client's new tunnel is set up before more of its requests
 * there are answered (see `connect/tunnel-setups.ts`).
 *
 * An HTTP/1.1 WebSocket upgrade goes to `forwardWebSocketUpgrade` instead (the proxy route
 * tells them apart). Another upgrade (h2c, say) is forwarded here as an ordinary request with
 * `Upgrade` removed; Node hands an upgrade request's body over unparsed, so an upgrade request
 * announcing a body gets 400.
 */
export function forwardInterceptedRequest (
  request: FastifyRequest,
  reply: FastifyReply,
  target: InterceptedRequestTarget,
  runtime: ProxyRuntime
): Promise<void> | undefined {
  if (target.problem !== null) throw inTunnelProblemError(target.problem)
  if (inTunnelUpgradeOf(request.raw)?.announcesBody === true) {
    throw new ProxyError('http_request_error', 'Upgrade requests with a body are not supported inside an intercepted tunnel.', { details: 'upgrade request with a body' })
  }
  const forward = (): Promise<void> | undefined => forwardRequest(request, reply, runtime, {
    destination: target.destination,
    scheme: 'https',
    pathAndQuery: target.pathAndQuery,
    applyMaxForwards: false
  })
  // While another tunnel of this client to this destination is being set up, it goes first (see tunnel-setups.ts).
  const setupsFirst = tunnelSetups.waitFor(interceptedTunnelOf(request.raw)?.clientAddress, target.destination, runtime.settings.limits.tunnelSetupWait)
  return setupsFirst === null ? forward() : setupsFirst.then(forward)
}

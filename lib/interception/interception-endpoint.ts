import type { IncomingMessage, ServerResponse } from 'node:http'
import { createSecureServer, type Http2SecureServer, type Http2ServerRequest, type Http2ServerResponse, type Http2Session } from 'node:http2'
import type { TLSSocket } from 'node:tls'
import type { Context } from '@opentelemetry/api'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import type { ForwardProxyDestination } from '../../types/destination'
import type { ForwardProxyCertificateProvider, ForwardProxyClientProtocols } from '../../types/interception'
import type { ForwardProxyUser } from '../../types/user'
import { attachProxyToServer } from '../attach-server'
import { countInterceptedRequest } from '../diagnostics/proxy-metrics'
import { writeRawResponseError } from '../diagnostics/proxy-response'
import { createProxyClientErrorHandler } from '../diagnostics/client-error-handler'
import { proxyRequestTargetOf } from '../proxy-request'
import { inTunnelProblemError } from './in-tunnel-request'
import { rememberInterceptedConnection, type InterceptedTunnel } from './intercepted-tunnels'
import { terminateTls } from './tls-termination'
import { applyServerLimits } from './endpoint-limits'
import { createInTunnelUpgradeListener } from './in-tunnel-upgrade'
import { TunnelTransport } from './tunnel-transport'
import { SocketTransport } from './socket-transport'
import type { ClientTransport, InterceptedClient, InterceptedStream, TransportSummary } from './client-transport'

/** The address the in-memory endpoint is listed under (it is never bound to a port). */
export const INTERCEPTION_ADDRESS = 'https://forward-proxy-tls-interception'

/** One tunnel chosen for interception, its 200 already sent. */
export interface AcceptedTunnel {
  readonly client: InterceptedClient
  readonly destination: ForwardProxyDestination
  /** The user who opened the tunnel; `request.proxyUser` of every request inside. */
  readonly user: ForwardProxyUser | null
  /** The client's address, for the access log of requests inside. */
  readonly clientAddress: string | undefined
  /** The CONNECT's trace context, parent of the spans of requests inside that bring none. */
  readonly traceContext: Context | undefined
  readonly provider: ForwardProxyCertificateProvider
  readonly idleTimeout: number
  readonly log: FastifyBaseLogger
  /** Called once when the tunnel has closed, however it ended. */
  readonly onClose: (summary: TransportSummary) => void
}

/** Settings of the endpoint. */
export interface EndpointSettings {
  readonly clientProtocols: ForwardProxyClientProtocols
  readonly handshakeTimeout: number
  /** The proxy's pseudonym, for the answers it makes on the endpoint. */
  readonly pseudonym: string
  /** Streams a client may reset before their answer, per connection and 10 s (`limits.maxStreamResets`). */
  readonly maxStreamResets: number
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
  #injecting: InterceptedTunnel | null = null

  constructor (fastify: FastifyInstance, settings: EndpointSettings) {
    this.#settings = settings
    const { clientProtocols } = settings
    this.#alpnProtocols = clientProtocols === 'http1' ? ['http/1.1'] : clientProtocols === 'http2' ? ['h2'] : ['h2', 'http/1.1']
    this.#server = createSecureServer({
      allowHTTP1: clientProtocols !== 'http2',
      // Advertised so that a client attempting WebSockets over HTTP/2 gets a 400
      // rather than a protocol error.
      settings: { enableConnectProtocol: true }
    })
    // HTTP/1.1 heads Node's parser refuses or that time out (408) get the proxy's answer.
    this.#server.on('clientError', createProxyClientErrorHandler(settings.pseudonym))
    fastify.addHook('onReady', async () => applyServerLimits(this.#server, fastify.server))
    fastify.addHook('onClose', async () => { this.#server.close() })
    this.#server.on('session', (session: Http2Session) => {
      if (this.#injecting !== null) rememberInterceptedConnection(session, this.#injecting)
      session.on('error', () => {})
      // Node's HTTP/2 session ignores the end of its socket's input and waits for a close that
      // an intercepted tunnel only gets at its idle timeout: a client whose TCP connection has
      // ended sends no more frames, so the session finishes its open streams and closes.
      session.socket.once('end', () => { if (!session.closed) session.close() })
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
        writeRawResponseError(res, settings.pseudonym, inTunnelProblemError(target.problem))
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
      user: tunnel.user,
      clientAddress: tunnel.clientAddress,
      traceContext: tunnel.traceContext
    }
    void terminateTls({
      transport,
      destination: tunnel.destination,
      provider: tunnel.provider,
      handshakeTimeout: this.#settings.handshakeTimeout,
      alpnProtocols: this.#alpnProtocols,
      server: this.#server,
      log: tunnel.log
    }).then((socket) => { if (socket !== null) this.#inject(socket, state) })
  }

  /**
   * Hands a terminated TLS connection to the HTTP server, as its TLS listener would: the
   * server's `'secureConnection'` starts HTTP/2 or (by ALPN) HTTP/1.1 on it. The HTTP/2
   * session Node makes waits for `secureConnect` while `secureConnecting` is set, which only a
   * TLS server's own connections clear, and TLS errors after the handshake reach `'error'`
   * only once control is released, as the server does for its own connections.
   */
  #inject (socket: TLSSocket, tunnel: InterceptedTunnel): void {
    rememberInterceptedConnection(socket, tunnel)
    const internals = socket as unknown as { secureConnecting: boolean, _releaseControl?: () => boolean }
    internals._releaseControl?.()
    internals.secureConnecting = false
    this.#injecting = tunnel
    try {
      this.#server.emit('secureConnection', socket)
    } finally {
      this.#injecting = null
    }
  }
}

/** A stream transport whose errors end in its close, which is all the tunnel reports. */
function quietTunnelTransport (client: InterceptedStream, idleTimeout: number): TunnelTransport {
  const transport = new TunnelTransport(client, idleTimeout)
  transport.on('error', () => {})
  return transport
}

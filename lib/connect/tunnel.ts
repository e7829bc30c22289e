// A CONNECT tunnel: target, policy and limit checks, the interception decision, the dial, the 200,
// and the client side over an HTTP/1.1 connection or an HTTP/2 stream.

import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { constants, type Http2ServerRequest, type ServerHttp2Stream } from 'node:http2'
import type { ForwardProxyDestination } from '../../types/destination'
import type { ProxyRuntime, InterceptionRuntime, InterceptedClient } from '../core/runtime'
import type { RawRequest } from '../core/proxy-request'
import { ProxyError, policyRefusal } from '../protocol/errors'
import { Cancellation, connectToDestination } from '../security/destination-connector'
import type { SecretSet } from '../security/secrets'
import { http1ConnectContextOf, type Http1ConnectContext } from './listener'
import type { ForwardProxyCertificateProvider } from '../../types/interception'
import {
  countInterceptedTunnel,
  countRequestOutcome,
  recordTunnelOpen,
  type TunnelKind
} from '../telemetry/metrics'
import { finishAbandonedConnect, finishTunnel, tunnelTraceContextOf } from '../telemetry/request-telemetry'
import { createDestinationReader, type TunnelRelayOptions, relayTunnel } from './relay'

/**
 * Opens a CONNECT tunnel, over HTTP/1.1 or HTTP/2.
 * Authentication has already run as the route's onRequest hook; here the target, policy and
 * the tunnel limit are checked, then (with tlsInterception registered) the destination
 * filters and the selector. An opaque tunnel has its destination dialed (address checked
 * after DNS) and only then gets 200 and the byte relay; an intercepted one gets 200 with no
 * dial and is handed to the in-memory TLS endpoint. Every refusal is a thrown ProxyError,
 * answered before any 200.
 */
export async function openConnectTunnel (
  request: FastifyRequest,
  reply: FastifyReply,
  destination: ForwardProxyDestination | null,
  runtime: ProxyRuntime
): Promise<void> {
  const client = tunnelClientOf(request)
  await afterNextPoll()
  // The client may have left while hooks ran (a slow credential check) or before: dial nothing for it.
  if (client.gone) {
    reply.hijack()
    finishAbandonedConnect(request, reply)
    return
  }
  if (destination === null) {
    throw new ProxyError('http_request_error', 'The CONNECT target must be host:port with a port from 1 to 65535.', { details: 'bad CONNECT target' })
  }
  runtime.policy.checkDestination(destination)
  runtime.userPolicy.admitRequest(request.proxyUser, destination)

  const releaseUserTunnel = runtime.userPolicy.reserveTunnel(request.proxyUser)
  const releaseTunnel = runtime.tunnels.tryReserve()
  if (releaseTunnel === null) {
    releaseUserTunnel()
    throw new ProxyError('connection_limit_reached', 'The proxy has reached its tunnel limit; try again later.')
  }
  const release = (): void => {
    releaseTunnel()
    releaseUserTunnel()
  }
  // Tracked from now on, so closing the server also ends a CONNECT still waiting for DNS or the dial.
  runtime.tunnels.track(client.closable)
  const clientGone = new Cancellation()
  const stopWatching = client.onGone(() => clientGone.abort())
  let provider: ForwardProxyCertificateProvider | null = null
  let upstream: Socket | undefined
  let reader: ReturnType<typeof createDestinationReader> | undefined
  try {
    if (runtime.interception !== undefined) provider = await decideInterception(request, destination, runtime.interception, runtime.settings.secrets, clientGone.signal)
    if (provider === null && !client.gone) {
      const { upstreams } = runtime.connector
      const upstreamProxy = upstreams == null ? null : await upstreams.routeFor(destination, request, 'tunnel')
      // HTTP/1.1 tunnels read their destination into reused buffers; an HTTP/2 stream's writes
      // finish only as flow control allows, and a TLS socket to an https:// upstream takes no
      // onread option: those keep piping.
      reader = client.http2 || upstreamProxy?.protocol === 'https:' ? undefined : createDestinationReader()
      upstream = await connectToDestination(destination, runtime.connector, clientGone, reader?.onread, upstreamProxy)
    }
  } catch (error) {
    release()
    throw error
  } finally {
    stopWatching()
  }
  if (client.gone) {
    upstream?.destroy()
    release()
    reply.hijack()
    finishAbandonedConnect(request, reply)
    return
  }

  const endpoint = runtime.interception?.endpoint
  if (upstream === undefined && (provider === null || endpoint === undefined)) {
    release()
    throw new Error('CONNECT flow reached the 200 with neither a destination nor an interception')
  }

  reply.hijack()
  const closed = (kind: TunnelKind, summary: { bytesUp: number, bytesDown: number, reason: string }): void => {
    release()
    finishTunnel(request, reply, { kind, ...summary })
  }
  if (upstream === undefined) {
    if (provider === null || endpoint === undefined) return
    countInterceptedTunnel()
    countRequestOutcome('connect', 'intercepted')
    const recordClose = recordTunnelOpen('intercepted', client.http2)
    endpoint.accept({
      client: client.intercept(),
      destination,
      user: request.proxyUser,
      clientAddress: request.raw.socket?.remoteAddress,
      traceContext: tunnelTraceContextOf(request),
      provider,
      idleTimeout: runtime.settings.limits.tunnelIdleTimeout,
      log: request.log,
      onClose: (summary) => { recordClose(summary); closed('intercepted', summary) }
    })
    return
  }
  upstream.on('error', () => {})
  runtime.tunnels.track(upstream)
  const kind: TunnelKind = client.http2 ? 'http2' : 'opaque'
  countRequestOutcome('connect', 'tunnel')
  const recordClose = recordTunnelOpen(kind, client.http2)
  client.establish(upstream, {
    idleTimeout: runtime.settings.limits.tunnelIdleTimeout,
    reader,
    onClose: (summary) => { recordClose(summary); closed(kind, summary) }
  })
}

/**
 * Resolves after the event loop's next poll phase. A client's FIN or RST that arrived with its
 * CONNECT (a spare connection Go's Transport abandoned while it waited in the listen queue) is
 * read there, after the head, so this is the earliest point at which the client is known to be
 * still there. It costs two turns of the loop, once per CONNECT.
 */
async function afterNextPoll (): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)))
}

/** The HTTP/1.1 connection or HTTP/2 stream the CONNECT came on, with the checks of its kind. */
function tunnelClientOf (request: FastifyRequest): TunnelClient {
  const { headers } = request
  if (headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0')) {
    throw new ProxyError('http_request_error', 'A CONNECT request cannot carry a body.', { details: 'CONNECT with a body' })
  }
  const context = http1ConnectContextOf(request.raw)
  if (context !== undefined) return http1TunnelClient(context)
  const raw = request.raw as RawRequest
  if (!('stream' in raw)) {
    throw new ProxyError('http_request_error', 'CONNECT is not supported on this server.', { status: 501, details: 'CONNECT outside a proxy listener' })
  }
  if (raw.stream.session?.encrypted !== true) {
    throw new ProxyError('http_request_error', 'HTTP/2 CONNECT needs a TLS listener.', { status: 501, details: 'HTTP/2 CONNECT without TLS' })
  }
  return http2TunnelClient(raw)
}

/**
 * Runs the destination filters, then the selector, once per CONNECT,
 * after authentication, policy and the tunnel limit. Returns the certificate provider for the
 * tunnel when it is to be intercepted, null when it is relayed opaquely (no selector, or the
 * selector said no). A host some secret is granted to is intercepted without asking the
 * selector: its placeholders can only be replaced inside the TLS. `signal` aborts when the
 * client goes away.
 * @throws ProxyError 403 `http_request_denied` when a filter refuses the tunnel; whatever a
 * filter, selector or factory throws (answered 500 `proxy_internal_error`).
 */
export async function decideInterception (
  request: FastifyRequest,
  destination: ForwardProxyDestination,
  interception: InterceptionRuntime,
  secrets: SecretSet | null,
  signal: AbortSignal
): Promise<ForwardProxyCertificateProvider | null> {
  for (const filter of interception.settings.destinationFilters) {
    if (await filter.allowTunnel(request, destination, signal) !== true) {
      throw policyRefusal('filter', new ProxyError('http_request_denied', 'The proxy refuses tunnels to this destination.', { details: 'refused by a destination filter' }))
    }
  }
  const { selector: selectorSource, certificateProvider: providerSource } = interception
  if (secrets?.grantsHost(destination.host) !== true) {
    if (selectorSource === null) return null
    const selector = typeof selectorSource === 'function' ? selectorSource(request) : selectorSource
    if (await selector.shouldIntercept(request, destination, signal) !== true) return null
  }
  if (providerSource === null) throw new Error('tlsInterception has no certificate provider')
  return typeof providerSource === 'function' ? providerSource(request) : providerSource
}

/**
 * The client side of a CONNECT, whatever carries it: a whole HTTP/1.1 connection or one
 * HTTP/2 stream. The shared CONNECT flow (target, policy, limit, dial) only needs to know
 * whether the client is still there, and how to answer 200 and start relaying.
 */
export interface TunnelClient {
  /** True when the CONNECT came on an HTTP/2 stream, false for an HTTP/1.1 connection. */
  readonly http2: boolean
  /** True once the client's connection or stream is gone. */
  readonly gone: boolean
  /** The stream closed when the client leaves (tracked so that server shutdown ends it). */
  readonly closable: Duplex
  /** Calls `listener` if the client leaves; returns a function that stops listening. */
  onGone (listener: () => void): () => void
  /** Answers 200 and relays bytes both ways between the client and `upstream` until both end. */
  establish (upstream: Socket, relay: TunnelRelayOptions): void
  /**
   * Answers 200 for an intercepted tunnel (no destination dialed) and hands over the client's
   * side: the connection or stream, with any bytes the client sent early, for TLS termination.
   */
  intercept (): InterceptedClient
}

/**
 * An HTTP/1.1 CONNECT: the whole connection becomes the tunnel. The 200 is written on the raw
 * socket, followed by any bytes the client sent after its head (e.g. an early ClientHello).
 */
export function http1TunnelClient (context: Http1ConnectContext): TunnelClient {
  const { socket, pending, response } = context
  return {
    http2: false,
    get gone () { return socket.destroyed },
    closable: socket,
    onGone (listener) {
      socket.once('close', listener)
      return () => socket.removeListener('close', listener)
    },
    establish (upstream: Socket, relay: TunnelRelayOptions) {
      response.detachSocket(socket)
      // The server's socket inactivity timeout (Fastify connectionTimeout) is for HTTP; the tunnel has its own.
      socket.setTimeout(0)
      // TLS servers (an HTTPS listener, the HTTP/1.1 side of an HTTP/2 one) make sockets that end
      // themselves when the client ends; a tunnel carries the half-close across instead, so the
      // destination's answer after the client's FIN still reaches the client.
      socket.allowHalfOpen = true
      const early = pending.takeEarlyBytes()
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      if (early.length > 0) upstream.write(early)
      relayTunnel({ input: socket, output: socket }, upstream, relay)
    },
    intercept () {
      const head = pending.takeEarlyBytes()
      response.detachSocket(socket)
      socket.setTimeout(0)
      socket.allowHalfOpen = true
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      return { kind: 'connection', socket, head }
    }
  }
}

/**
 * An HTTP/2 CONNECT: one stream of the session becomes the tunnel,
 * other streams go on. Bytes from the client are read through Node's compatibility request,
 * which already consumes the stream and pauses it when unread (so HTTP/2 flow control holds
 * a fast client back); bytes to the client are written on the stream, whose writes wait for
 * the client's flow-control window. A destination failure resets the stream with
 * CONNECT_ERROR; a client that resets the stream gets the destination closed with a TCP RST.
 */
export function http2TunnelClient (request: Http2ServerRequest): TunnelClient {
  const { stream } = request
  return {
    http2: true,
    get gone () { return stream.destroyed || stream.closed },
    closable: stream,
    onGone (listener) {
      stream.once('close', listener)
      return () => stream.removeListener('close', listener)
    },
    establish (upstream: Socket, relay: TunnelRelayOptions) {
      stream.setTimeout(0)
      stream.respond({ ':status': 200 })
      relayTunnel({ input: request, output: stream }, upstream, {
        ...relay,
        abortClient: () => resetStream(stream, constants.NGHTTP2_CONNECT_ERROR)
      })
    },
    intercept () {
      stream.setTimeout(0)
      stream.respond({ ':status': 200 })
      return { kind: 'stream', input: request, output: stream, abort: () => resetStream(stream, constants.NGHTTP2_CONNECT_ERROR) }
    }
  }
}

/**
 * Resets `stream` with `code` and no END_STREAM before it. Node's `close(code)` on a stream
 * whose writable side is open first ends that side, and with no write in flight that END_STREAM
 * goes out ahead of the RST_STREAM: the client would read a clean end of the tunnel (a cut
 * download that looks complete), and a client that had already half-closed would see the stream
 * closed with no error at all. While a write is in flight Node resets without ending first, so
 * an empty write (no payload) goes before the close.
 */
function resetStream (stream: ServerHttp2Stream, code: number): void {
  if (stream.closed) return
  if (!stream.writableEnded) stream.write(Buffer.alloc(0))
  stream.close(code)
}

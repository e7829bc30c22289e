// A CONNECT tunnel: admission (target, policy and limits), the interception decision, the dial,
// the 200, and the client side over an HTTP/1.1 connection or an HTTP/2 stream.

import type { FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { constants, type Http2ServerRequest, type ServerHttp2Stream } from 'node:http2'
import type { ForwardProxyDestination } from '../../types/destination'
import type { ProxyRuntime, InterceptionRuntime, InterceptedClient } from '../core/runtime'
import type { ConnectRequestTarget, RawRequest } from '../core/proxy-request'
import { ObjectSlot } from '../protocol/object-slot'
import { ProxyError, policyRefusal, refusedBy } from '../protocol/errors'
import { Cancellation, connectToDestination } from '../security/destination-connector'
import type { SecretSet } from '../security/secrets'
import { TunnelGrant } from '../security/tunnel-grant'
import { userRecheckOf } from '../security/proxy-auth'
import { http1ConnectContextOf, type Http1ConnectContext } from './listener'
import type { ForwardProxyCertificateProvider } from '../../types/interception'
import {
  countInterceptedTunnel,
  countRequestOutcome,
  recordTunnelOpen,
  type TunnelKind
} from '../telemetry/metrics'
import { finishAbandonedConnect, finishTunnel, noteDialed, noteReportedRefusal, tunnelTraceContextOf } from '../telemetry/request-telemetry'
import { createDestinationReader, type TunnelRelayOptions, relayTunnel } from './relay'

/**
 * The proxy route's last onRequest hook for a CONNECT (after authentication): the request's
 * form (no body, a listener that can carry a tunnel), a client still there (one that left while
 * it waited in the listen queue or while earlier hooks ran is dropped here, with nothing
 * dialed and no application code asked), the target, the destination and user policies, and
 * the tunnel limits (the slot is held from here: the interception decision and the
 * application's later hooks run within the limit). What passes reaches the hooks after it
 * (the interception decision among them) and the handler, {@link openConnectTunnel}; the slot
 * is given back when the client leaves or the CONNECT is answered without a tunnel
 * ({@link releaseUnopenedTunnel}), unless the handler took it over. Every refusal is a thrown
 * ProxyError, answered before any 200.
 */
export async function admitConnect (request: FastifyRequest, reply: FastifyReply, target: ConnectRequestTarget, runtime: ProxyRuntime): Promise<void> {
  const client = tunnelClientOf(request)
  await afterNextPoll()
  if (client.gone) {
    dropAbandonedConnect(request, reply)
    return
  }
  const { destination } = target
  if (destination === null) {
    throw new ProxyError('http_request_error', 'The CONNECT target must be host:port with a port from 1 to 65535.', { details: 'bad CONNECT target' })
  }
  // Both run: the user's request is counted against its rate even when the policy reports.
  const reportedByPolicy = runtime.policy.checkDestination(destination)
  const reportedByUser = runtime.userPolicy.admitRequest(request.proxyUser, destination)
  const reported = reportedByPolicy ?? reportedByUser
  if (reported !== null) noteReportedRefusal(request, reported)
  // With shared limits the rate and the user's slot are counted in their store.
  const counted = runtime.userPolicy.countInStore(request.proxyUser)
  if (counted !== null) await counted
  const reserved = runtime.userPolicy.reserveTunnel(request.proxyUser)
  const releaseUserTunnel = reserved instanceof Promise ? await reserved : reserved
  if (client.gone) {
    releaseUserTunnel()
    dropAbandonedConnect(request, reply)
    return
  }
  const releaseTunnel = runtime.tunnels.tryReserve()
  if (releaseTunnel === null) {
    releaseUserTunnel()
    throw refusedBy('limits.maxConcurrentTunnels', new ProxyError('connection_limit_reached', 'The proxy has reached its tunnel limit; try again later.'))
  }
  let released = false
  const release = (): void => {
    if (released) return
    released = true
    releaseTunnel()
    releaseUserTunnel()
  }
  // Tracked from now on, so closing the server also ends a CONNECT still deciding, resolving or dialing.
  runtime.tunnels.track(client.closable)
  const grant = new TunnelGrant(request.proxyUser, runtime.settings, userRecheckOf(request, () => runtime.settings.auth?.check ?? null))
  tunnelAdmissions.set(request.raw, { client, destination, grant, release, stopReleasingOnGone: client.onGone(release) })
}

/**
 * The proxy route's onResponse hook for a CONNECT answered without a tunnel (a refusal by a
 * later hook, the interception decision or the handler): gives its tunnel slot back.
 */
export function releaseUnopenedTunnel (request: FastifyRequest): void {
  tunnelAdmissions.get(request.raw)?.release()
}

/**
 * The preHandler hook tlsInterception adds: decides whether an admitted CONNECT's tunnel is
 * intercepted, and puts the answer in `request.interceptTunnel` for the hooks after it and the
 * handler. The destination filters run first (a refusal is 403 `http_request_denied`), then the
 * selector; a host some secret is granted to is intercepted without asking the selector, since
 * its placeholders can only be replaced inside the TLS. The filters and the selector get an
 * AbortSignal that aborts when the client goes away. Every other request (it runs for all of the
 * application's) passes at once, without a promise.
 * Errors (whatever a filter, the selector or its factory throws) go to `done`: 500
 * `proxy_internal_error`, or a filter's 403.
 */
export function decideTunnelInterception (runtime: ProxyRuntime): preHandlerHookHandler {
  return function decideInterception (request, _reply, done) {
    const admission = tunnelAdmissions.get(request.raw)
    const { interception } = runtime
    if (admission === undefined || admission.client.gone || interception === undefined) {
      done()
      return
    }
    const { client, destination } = admission
    const clientGone = new Cancellation()
    const stopWatching = client.onGone(() => clientGone.abort())
    shouldInterceptTunnel(request, destination, interception, runtime.settings.secrets, clientGone).then((intercept) => {
      stopWatching()
      request.interceptTunnel = intercept
      done()
    }, (error: unknown) => {
      stopWatching()
      done(error as Error)
    })
  }
}

/** Ends a CONNECT whose client left before its answer: nothing is written, the access line says so. */
function dropAbandonedConnect (request: FastifyRequest, reply: FastifyReply): void {
  reply.hijack()
  finishAbandonedConnect(request, reply)
}

/**
 * Opens an admitted CONNECT tunnel ({@link admitConnect}), over HTTP/1.1 or HTTP/2, taking over
 * its slot: a tunnel that `request.interceptTunnel` says to intercept gets 200 with no dial and
 * is handed to the in-memory TLS endpoint; any other has its destination dialed (address
 * checked after DNS) and only then gets 200 and the byte relay. Every refusal is a thrown
 * ProxyError, answered before any 200.
 */
export async function openConnectTunnel (request: FastifyRequest, reply: FastifyReply, runtime: ProxyRuntime): Promise<void> {
  const admission = tunnelAdmissions.get(request.raw)
  if (admission === undefined) throw new Error('CONNECT handler reached without admission')
  // From here the handler gives the slot back: when the tunnel closes, or on a failure.
  const { client, destination, grant, release } = admission
  admission.stopReleasingOnGone()
  if (client.gone) {
    release()
    dropAbandonedConnect(request, reply)
    return
  }
  const intercept = request.interceptTunnel === true
  if (intercept && runtime.interception === undefined) {
    release()
    throw new Error('request.interceptTunnel is true but tlsInterception is not registered')
  }
  const clientGone = new Cancellation()
  const stopWatching = client.onGone(() => clientGone.abort())
  let provider: ForwardProxyCertificateProvider | null = null
  let upstream: Socket | undefined
  let reader: ReturnType<typeof createDestinationReader> | undefined
  try {
    if (intercept && runtime.interception !== undefined) provider = certificateProviderFor(request, runtime.interception)
    if (provider === null && !client.gone) {
      const { upstreams } = runtime.connector
      const upstreamProxy = upstreams == null ? null : await upstreams.routeFor(destination, request, 'tunnel')
      // HTTP/1.1 tunnels read their destination into reused buffers; an HTTP/2 stream's writes
      // finish only as flow control allows, and a TLS socket to an https:// upstream takes no
      // onread option: those keep piping.
      reader = client.http2 || upstreamProxy?.protocol === 'https:' ? undefined : createDestinationReader()
      upstream = await connectToDestination(destination, runtime.connector, clientGone, reader?.onread, upstreamProxy)
      noteDialed(request, upstream)
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
    dropAbandonedConnect(request, reply)
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
      grant,
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
  const opened = upstream
  runtime.tunnels.trackRevocable({
    grant,
    destination,
    close () {
      request.log.info({ tunnel: `${destination.host}:${destination.port}` }, 'tunnel closed: its user or destination is no longer allowed')
      opened.destroy()
    }
  }, upstream)
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
 * Runs the destination filters, then the selector (unless a secret is granted to the host:
 * then the tunnel is intercepted without asking). True to intercept.
 * @throws ProxyError 403 `http_request_denied` when a filter refuses the tunnel.
 */
async function shouldInterceptTunnel (
  request: FastifyRequest,
  destination: ForwardProxyDestination,
  interception: InterceptionRuntime,
  secrets: SecretSet | null,
  clientGone: Cancellation
): Promise<boolean> {
  for (const filter of interception.settings.destinationFilters) {
    if (await filter.allowTunnel(request, destination, clientGone.signal) !== true) {
      throw policyRefusal('filter', refusedBy('destinationFilters', new ProxyError('http_request_denied', 'The proxy refuses tunnels to this destination.', { details: 'refused by a destination filter' })))
    }
  }
  if (secrets?.grantsDestination(destination.host, destination.port) === true) return true
  const { selector: selectorSource } = interception
  if (selectorSource === null) return false
  const selector = typeof selectorSource === 'function' ? selectorSource(request) : selectorSource
  return await selector.shouldIntercept(request, destination, clientGone.signal) === true
}

/** The certificate provider for an intercepted tunnel: the configured one, or what its factory makes for this request. */
function certificateProviderFor (request: FastifyRequest, interception: InterceptionRuntime): ForwardProxyCertificateProvider {
  const { certificateProvider: providerSource } = interception
  if (providerSource === null) throw new Error('tlsInterception has no certificate provider')
  return typeof providerSource === 'function' ? providerSource(request) : providerSource
}

/** An admitted CONNECT, from {@link admitConnect} to the handler. */
interface TunnelAdmission {
  readonly client: TunnelClient
  readonly destination: ForwardProxyDestination
  /** Who may use the tunnel, as admitted here. */
  readonly grant: TunnelGrant
  /** Gives the tunnel slot back; does nothing the second time. */
  readonly release: () => void
  /** Stops giving the slot back when the client leaves (the handler has taken it over). */
  readonly stopReleasingOnGone: () => void
}

const tunnelAdmissions = new ObjectSlot<TunnelAdmission>('tunnelAdmission')

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

import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ForwardProxyDestination } from '../../types/destination'
import type { ProxyRuntime } from '../proxy-runtime'
import type { RawRequest } from '../proxy-request'
import { ProxyError } from '../diagnostics/proxy-error'
import { connectToDestination } from '../security/destination-connector'
import { http1ConnectContextOf } from './http1-connection'
import { http1TunnelClient } from './http1-tunnel-client'
import { http2TunnelClient } from './http2-tunnel-client'
import type { TunnelClient } from './tunnel-client'
import type { Socket } from 'node:net'
import type { ForwardProxyCertificateProvider } from '../../types/interception'
import { decideInterception } from '../interception/tunnel-decision'
import { countInterceptedTunnel, countRequestOutcome } from '../diagnostics/proxy-metrics'
import { recordTunnelOpen, type TunnelKind } from '../diagnostics/tunnel-metrics'
import { finishAbandonedConnect, finishTunnel, tunnelTraceContextOf } from '../diagnostics/request-telemetry'
import { createDestinationReader } from './destination-reader'

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

  const release = runtime.tunnels.tryReserve()
  if (release === null) {
    throw new ProxyError('connection_limit_reached', 'The proxy has reached its tunnel limit; try again later.')
  }
  // Tracked from now on, so closing the server also ends a CONNECT still waiting for DNS or the dial.
  runtime.tunnels.track(client.closable)
  const clientGone = new AbortController()
  const stopWatching = client.onGone(() => clientGone.abort())
  let provider: ForwardProxyCertificateProvider | null = null
  let upstream: Socket | undefined
  // HTTP/1.1 tunnels read their destination into reused buffers; an HTTP/2 stream's writes
  // finish only as flow control allows, so its tunnels keep piping.
  const reader = client.http2 ? undefined : createDestinationReader()
  try {
    if (runtime.interception !== undefined) provider = await decideInterception(request, destination, runtime.interception, clientGone.signal)
    if (provider === null && !client.gone) upstream = await connectToDestination(destination, runtime.connector, clientGone.signal, reader?.onread)
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

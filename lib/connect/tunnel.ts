// The handler of an admitted CONNECT: an intercepted tunnel is answered 200 without a dial and
// handed to the interception endpoint, any other has its destination dialed, then gets 200 and
// the byte relay.

import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Socket } from 'node:net'
import type { ProxyRuntime, InterceptionRuntime } from '../core/runtime'
import { InterceptionNotRegisteredError } from '../core/usage-errors'
import { internalFailure } from '../protocol/errors'
import { connectToDestination } from '../security/destination-connector'
import type { ForwardProxyCertificateProvider } from '../../types/interception'
import {
  countInterceptedTunnel,
  countRequestOutcome,
  recordTunnelOpen,
  type TunnelKind
} from '../telemetry/metrics'
import { finishTunnel, forwardNotesOf, noteDialed, tunnelTraceContextOf } from '../telemetry/request-telemetry'
import { noteDialDurations } from '../security/dialed-address'
import { createDestinationReader } from './relay'
import { dropAbandonedConnect, tunnelAdmissionOf } from './admission'

/**
 * Opens an admitted CONNECT tunnel (`admitConnect`), over HTTP/1.1 or HTTP/2, taking over
 * its slot: a tunnel whose `request.tunnelMode` is `'intercept'` gets 200 with no dial and
 * is handed to the in-memory TLS endpoint; any other has its destination dialed (address
 * checked after DNS) and only then gets 200 and the byte relay. Every refusal is a thrown
 * ProxyError, answered before any 200.
 */
export async function openConnectTunnel (request: FastifyRequest, reply: FastifyReply, runtime: ProxyRuntime): Promise<void> {
  const admission = tunnelAdmissionOf(request.raw)
  if (admission === undefined) throw internalFailure('CONNECT handler reached without admission')
  // From here the handler gives the slot back: when the tunnel closes, or on a failure.
  const { client, destination, grant, clientGone, release } = admission
  admission.stopReleasingOnGone()
  if (client.gone) {
    release()
    dropAbandonedConnect(request, reply)
    return
  }
  const intercept = request.tunnelMode === 'intercept'
  if (intercept && runtime.interception === undefined) {
    release()
    throw new InterceptionNotRegisteredError()
  }
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
      const { capture } = forwardNotesOf(request)
      if (capture !== undefined) capture.dispatchedAt = performance.now()
      upstream = await connectToDestination(destination, runtime.connector, clientGone, reader?.onread, upstreamProxy)
      noteDialed(request, upstream)
      if (capture?.dispatchedAt !== undefined) {
        // The 200 goes out now: the tunnel's entry times its dial, then its life.
        capture.headAt = performance.now()
        noteDialDurations(upstream, { connect: capture.headAt - capture.dispatchedAt, ssl: -1, openedAt: capture.headAt })
      }
    }
  } catch (error) {
    release()
    throw error
  } finally {
    admission.stopWatchingClient()
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
    throw internalFailure('CONNECT flow reached the 200 with neither a destination nor an interception')
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
  const opened = upstream
  runtime.tunnels.trackOpaque(upstream, {
    grant,
    destination,
    close () {
      request.log.info({ tunnel: `${destination.host}:${destination.port}` }, 'tunnel closed: its user or destination is no longer allowed')
      opened.destroy()
    }
  })
  const kind: TunnelKind = client.http2 ? 'http2' : 'opaque'
  countRequestOutcome('connect', 'tunnel')
  const recordClose = recordTunnelOpen(kind, client.http2)
  client.establish(upstream, {
    idleTimeout: runtime.settings.limits.tunnelIdleTimeout,
    reader,
    onClose: (summary) => { recordClose(summary); closed(kind, summary) }
  })
}

/** The certificate provider for an intercepted tunnel: the configured one, or what its factory makes for this request. */
function certificateProviderFor (request: FastifyRequest, interception: InterceptionRuntime): ForwardProxyCertificateProvider {
  const { certificateProvider: providerSource } = interception
  if (providerSource === null) throw internalFailure('tlsInterception has no certificate provider')
  return typeof providerSource === 'function' ? providerSource(request) : providerSource
}

// The handler of an admitted CONNECT: an intercepted tunnel is answered 200 without a dial and
// handed to the interception endpoint, any other has its destination dialed, then gets 200 and
// the byte relay.

import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Socket } from 'node:net'
import type { ProxyRuntime, InterceptionRuntime } from '../core/runtime'
import { InterceptionNotRegisteredError } from '../core/usage-errors'
import { internalFailure } from '../protocol/errors'
import { connectToDestinationThen } from '../security/destination-connector'
import type { UpstreamProxy } from '../security/upstream-proxy'
import type { ForwardProxyCertificateProvider } from '../../types/interception'
import {
  countInterceptedTunnel,
  countRequestOutcome,
  recordTunnelOpen,
  type TunnelKind
} from '../telemetry/metrics'
import { finishTunnel, forwardNotesOf, noteBecameTunnel, noteDialed, tunnelTraceContextOf } from '../telemetry/request-telemetry'
import { noteDialDurations } from '../security/dialed-address'
import { createDestinationReader, type DestinationReader } from './destination-reader'
import { dropAbandonedConnect, tunnelAdmissionOf, type TunnelAdmission } from './admission'

/**
 * Opens an admitted CONNECT tunnel (`admitConnect`), over HTTP/1.1 or HTTP/2, taking over
 * its slot: a tunnel whose `request.tunnelMode` is `'intercept'` gets 200 with no dial and
 * is handed to the in-memory TLS endpoint; any other has its destination dialed (address
 * checked after DNS) and only then gets 200 and the byte relay. Every refusal is a ProxyError
 * given to `fail`, answered before any 200. Driven by callbacks, not promises: an opaque CONNECT
 * to an address makes none.
 */
export function openConnectTunnel (request: FastifyRequest, reply: FastifyReply, runtime: ProxyRuntime, fail: (error: unknown) => void): void {
  const admission = tunnelAdmissionOf(request.raw)
  if (admission === undefined) {
    fail(internalFailure('CONNECT handler reached without admission'))
    return
  }
  // From here the handler gives the slot back: when the tunnel closes, or on a failure.
  admission.stopReleasingOnGone()
  const { client, release } = admission
  if (client.gone) {
    dropAbandonedTunnel(request, reply, admission)
    return
  }
  const failBeforeAnswer = (error: unknown): void => {
    admission.stopWatchingClient()
    release()
    fail(error)
  }
  const { interception } = runtime
  if (request.tunnelMode === 'intercept') {
    if (interception === undefined) {
      failBeforeAnswer(new InterceptionNotRegisteredError())
      return
    }
    let provider: ForwardProxyCertificateProvider
    try {
      provider = certificateProviderFor(request, interception)
    } catch (error) {
      failBeforeAnswer(error)
      return
    }
    admission.stopWatchingClient()
    if (client.gone) {
      dropAbandonedTunnel(request, reply, admission)
      return
    }
    acceptInterceptedTunnel(request, reply, runtime, admission, interception.endpoint, provider)
    return
  }
  const { upstreams } = runtime.connector
  let route: UpstreamProxy | null | Promise<UpstreamProxy | null>
  try {
    route = upstreams == null ? null : upstreams.routeFor(admission.destination, request, 'tunnel')
  } catch (error) {
    failBeforeAnswer(error)
    return
  }
  if (route instanceof Promise) {
    route.then((upstreamProxy) => {
      try {
        dialThenRelay(request, reply, runtime, admission, upstreamProxy, failBeforeAnswer)
      } catch (error) {
        failBeforeAnswer(error)
      }
    }, failBeforeAnswer)
  } else dialThenRelay(request, reply, runtime, admission, route, failBeforeAnswer)
}

/** Dials an opaque tunnel's destination (directly or through `upstreamProxy`), then answers 200 and relays. */
function dialThenRelay (
  request: FastifyRequest,
  reply: FastifyReply,
  runtime: ProxyRuntime,
  admission: TunnelAdmission,
  upstreamProxy: UpstreamProxy | null,
  failBeforeAnswer: (error: unknown) => void
): void {
  const { client, destination, clientGone } = admission
  if (client.gone) {
    dropAbandonedTunnel(request, reply, admission)
    return
  }
  // HTTP/1.1 tunnels read their destination into reused buffers; an HTTP/2 stream's writes
  // finish only as flow control allows, and a TLS socket to an https:// upstream takes no
  // onread option: those keep piping.
  const reader = client.http2 || upstreamProxy?.protocol === 'https:' ? undefined : createDestinationReader()
  const { capture } = forwardNotesOf(request)
  if (capture !== undefined) capture.dispatchedAt = performance.now()
  connectToDestinationThen(destination, runtime.connector, (error, upstream) => {
    if (upstream === undefined) {
      // The dial failed because its client left (it was cancelled), or failed after it did:
      // nobody is left to answer, and the CONNECT was abandoned, not refused.
      if (client.gone) dropAbandonedTunnel(request, reply, admission)
      else failBeforeAnswer(error)
      return
    }
    // Runs from the destination socket's 'connect' event: a failure of ours must reach the error
    // handler (as it did from an async handler), not the process.
    try {
      admission.stopWatchingClient()
      noteDialed(request, upstream)
      if (capture?.dispatchedAt !== undefined) {
        // The 200 goes out now: the tunnel's entry times its dial, then its life.
        capture.headAt = performance.now()
        noteDialDurations(upstream, { connect: capture.headAt - capture.dispatchedAt, ssl: -1, openedAt: capture.headAt })
      }
      if (client.gone) {
        upstream.destroy()
        dropAbandonedTunnel(request, reply, admission)
        return
      }
      relayOpaqueTunnel(request, reply, runtime, admission, upstream, reader)
    } catch (failure) {
      upstream.destroy()
      if (reply.sent) client.closable.destroy()
      failBeforeAnswer(failure)
    }
  }, clientGone, reader?.onread, upstreamProxy)
}

/** Answers an intercepted tunnel 200 (nothing dialed) and hands it to the in-memory TLS endpoint. */
function acceptInterceptedTunnel (
  request: FastifyRequest,
  reply: FastifyReply,
  runtime: ProxyRuntime,
  admission: TunnelAdmission,
  endpoint: InterceptionRuntime['endpoint'],
  provider: ForwardProxyCertificateProvider
): void {
  const { client, destination, grant, release } = admission
  reply.hijack()
  noteBecameTunnel(request)
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
    onClose: (summary) => {
      recordClose(summary)
      release()
      finishTunnel(request, reply, { kind: 'intercepted', ...summary })
    }
  })
}

/** Answers an opaque tunnel 200 and relays its bytes, tracked for shutdown and for revocation. */
function relayOpaqueTunnel (
  request: FastifyRequest,
  reply: FastifyReply,
  runtime: ProxyRuntime,
  admission: TunnelAdmission,
  upstream: Socket,
  reader: DestinationReader | undefined
): void {
  const { client, destination, grant, release } = admission
  reply.hijack()
  noteBecameTunnel(request)
  runtime.tunnels.trackOpaque(upstream, {
    grant,
    destination,
    close () {
      request.log.info({ tunnel: `${destination.host}:${destination.port}` }, 'tunnel closed: its user or destination is no longer allowed')
      upstream.destroy()
    }
  })
  const kind: TunnelKind = client.http2 ? 'http2' : 'opaque'
  countRequestOutcome('connect', 'tunnel')
  const recordClose = recordTunnelOpen(kind, client.http2)
  client.establish(upstream, {
    idleTimeout: runtime.settings.limits.tunnelIdleTimeout,
    reader,
    onClose: (summary) => {
      recordClose(summary)
      release()
      finishTunnel(request, reply, { kind, ...summary })
    }
  })
}

/** Ends a CONNECT whose client left before its answer: the watch stopped, its slot given back, nothing written. */
function dropAbandonedTunnel (request: FastifyRequest, reply: FastifyReply, admission: TunnelAdmission): void {
  admission.stopWatchingClient()
  admission.release()
  dropAbandonedConnect(request, reply)
}

/** The certificate provider for an intercepted tunnel: the configured one, or what its factory makes for this request. */
function certificateProviderFor (request: FastifyRequest, interception: InterceptionRuntime): ForwardProxyCertificateProvider {
  const { certificateProvider: providerSource } = interception
  if (providerSource === null) throw internalFailure('tlsInterception has no certificate provider')
  return typeof providerSource === 'function' ? providerSource(request) : providerSource
}

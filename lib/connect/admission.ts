// The admission of a CONNECT, the proxy route's last onRequest step for it: the request's form, a
// client still there, the target, the destination and user policies and the tunnel limits.

import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ForwardProxyDestination } from '../../types/destination'
import type { ProxyRuntime } from '../core/runtime'
import type { ConnectRequestTarget, RawRequest } from '../core/proxy-request'
import { ObjectSlot } from '../protocol/object-slot'
import { ProxyError, asError } from '../protocol/errors'
import { refusedBy } from '../protocol/refusals'
import { TunnelGrant } from '../security/tunnel-grant'
import { Cancellation } from '../security/destination-connector'
import { userRecheckOf } from '../security/proxy-auth'
import { finishAbandonedRequest, noteReportedRefusal } from '../telemetry/request-telemetry'
import { http1ConnectContextOf } from './listener'
import { http1TunnelClient, http2TunnelClient, type TunnelClient } from './tunnel-client'

/**
 * The proxy route's last onRequest hook for a CONNECT (after authentication): the request's
 * form (no body, a listener that can carry a tunnel), a client still there (one that left while
 * it waited in the listen queue or while earlier hooks ran is dropped here, with nothing
 * dialed and no application code asked), the target, the destination and user policies, and
 * the tunnel limits (the slot is held from here: the interception decision and the
 * application's later hooks run within the limit). What passes reaches the hooks after it
 * (the interception decision among them) and the handler (`openConnectTunnel`); the slot
 * is given back when the client leaves or the CONNECT is answered without a tunnel
 * ({@link releaseUnopenedTunnel}), unless the handler took it over. Every refusal is a
 * ProxyError given to `done`, answered before any 200. Driven by callbacks: a CONNECT whose
 * checks answer at once makes no promise here.
 */
export function admitConnect (request: FastifyRequest, reply: FastifyReply, target: ConnectRequestTarget, runtime: ProxyRuntime, done: AdmissionDone): void {
  let client: TunnelClient
  try {
    client = tunnelClientOf(request)
  } catch (error) {
    done(asError(error))
    return
  }
  const { destination } = target
  // Only intercepted requests wait for their client's tunnels being set up: without interception
  // (or with the wait off) nothing is counted. A bad target is refused below, never set up.
  if (destination !== null && runtime.interception !== undefined && runtime.settings.limits.tunnelSetupWait > 0) client.countSetup(destination)
  afterNextPoll(() => {
    if (client.gone) {
      dropAbandonedConnect(request, reply)
      done()
      return
    }
    if (destination === null) {
      done(new ProxyError('http_request_error', 'The CONNECT target must be host:port with a port from 1 to 65535.', { details: 'bad CONNECT target' }))
      return
    }
    let counted: Promise<void> | null
    try {
      // Both run: the user's request is counted against its rate even when the policy reports.
      const reportedByPolicy = runtime.policy.checkDestination(destination)
      const reportedByUser = runtime.userPolicy.admitRequest(request.proxyUser, destination)
      const reported = reportedByPolicy ?? reportedByUser
      if (reported !== null) noteReportedRefusal(request, reported)
      // With shared limits the rate and the user's slot are counted in their store.
      counted = runtime.userPolicy.countInStore(request.proxyUser)
    } catch (error) {
      done(asError(error))
      return
    }
    if (counted === null) reserveTunnelSlots(request, reply, client, destination, runtime, done)
    else counted.then(() => reserveTunnelSlots(request, reply, client, destination, runtime, done), done)
  })
}

/** What {@link admitConnect} calls once: with the refusal, or with nothing when the CONNECT goes on (or was dropped). */
export type AdmissionDone = (error?: Error) => void

/** The user's tunnel slot, then the proxy's; on success the admission is kept for the hooks after it and the handler. */
function reserveTunnelSlots (
  request: FastifyRequest,
  reply: FastifyReply,
  client: TunnelClient,
  destination: ForwardProxyDestination,
  runtime: ProxyRuntime,
  done: AdmissionDone
): void {
  let reserved: ReturnType<ProxyRuntime['userPolicy']['reserveTunnel']>
  try {
    reserved = runtime.userPolicy.reserveTunnel(request.proxyUser)
  } catch (error) {
    done(asError(error))
    return
  }
  if (reserved instanceof Promise) {
    reserved.then((releaseUserTunnel) => admitWithSlots(request, reply, client, destination, runtime, releaseUserTunnel, done), done)
  } else admitWithSlots(request, reply, client, destination, runtime, reserved, done)
}

function admitWithSlots (
  request: FastifyRequest,
  reply: FastifyReply,
  client: TunnelClient,
  destination: ForwardProxyDestination,
  runtime: ProxyRuntime,
  releaseUserTunnel: () => void,
  done: AdmissionDone
): void {
  if (client.gone) {
    releaseUserTunnel()
    dropAbandonedConnect(request, reply)
    done()
    return
  }
  const releaseTunnel = runtime.tunnels.tryReserve()
  if (releaseTunnel === null) {
    releaseUserTunnel()
    done(refusedBy('limits.maxConcurrentTunnels', new ProxyError('connection_limit_reached', 'The proxy has reached its tunnel limit; try again later.')))
    return
  }
  let released = false
  const release = (): void => {
    if (released) return
    released = true
    releaseTunnel()
    releaseUserTunnel()
  }
  let grant: TunnelGrant
  try {
    grant = new TunnelGrant(request.proxyUser, runtime.settings, userRecheckOf(request, () => runtime.settings.auth?.check ?? null))
  } catch (error) {
    release()
    done(asError(error))
    return
  }
  // Tracked from now on, so closing the server also ends a CONNECT still deciding, resolving or dialing.
  runtime.tunnels.track(client.closable)
  // One listener for the client's leaving, until the tunnel is answered: it gives the slot back
  // until the handler takes it over, and cancels the interception decision and the dial.
  const clientGone = new Cancellation()
  const stopWatchingClient = client.onGone(() => clientGone.abort())
  tunnelAdmissions.set(request.raw, { client, destination, grant, clientGone, stopWatchingClient, release, stopReleasingOnGone: clientGone.onAbort(release) })
  done()
}

/**
 * The proxy route's onResponse hook for a CONNECT answered without a tunnel (a refusal by a
 * later hook, the interception decision or the handler): gives its tunnel slot back.
 */
export function releaseUnopenedTunnel (request: FastifyRequest): void {
  tunnelAdmissions.get(request.raw)?.release()
}

/** Ends a CONNECT whose client left before its answer: nothing is written, the access line says so. */
export function dropAbandonedConnect (request: FastifyRequest, reply: FastifyReply): void {
  reply.hijack()
  finishAbandonedRequest(request, reply)
}

/**
 * Calls `callback` after the event loop's next poll phase. A client's FIN or RST that arrived with its
 * CONNECT (a spare connection Go's Transport abandoned while it waited in the listen queue) is
 * read there, after the head, so this is the earliest point at which the client is known to be
 * still there. It costs two turns of the loop; the CONNECTs that arrive in one turn wait together,
 * on one pair of immediates.
 */
function afterNextPoll (callback: () => void): void {
  if (arrivedThisTurn.length === 0) setImmediate(waitOneMoreTurn)
  arrivedThisTurn.push(callback)
}

let arrivedThisTurn: Array<() => void> = []

/** This turn's check phase: the CONNECTs that arrived in it go on at the next one. */
function waitOneMoreTurn (): void {
  const batch = arrivedThisTurn
  arrivedThisTurn = []
  setImmediate(() => { for (const callback of batch) callback() })
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

/** An admitted CONNECT, from {@link admitConnect} to the handler. */
export interface TunnelAdmission {
  readonly client: TunnelClient
  readonly destination: ForwardProxyDestination
  /** Who may use the tunnel, as admitted here. */
  readonly grant: TunnelGrant
  /** Aborted when the client leaves (its connection or stream closes) before {@link stopWatchingClient}. */
  readonly clientGone: Cancellation
  /**
   * Stops watching for the client's leaving (the handler, once the tunnel is answered). A
   * decision's AbortSignal would otherwise be aborted when every tunnel closes, and an abort
   * event costs more than the rest of the teardown.
   */
  readonly stopWatchingClient: () => void
  /** Gives the tunnel slot back; does nothing the second time. */
  readonly release: () => void
  /** Stops giving the slot back when the client leaves (the handler has taken it over). */
  readonly stopReleasingOnGone: () => void
}

const tunnelAdmissions = new ObjectSlot<TunnelAdmission>('tunnelAdmission')

/** The admission of a CONNECT that {@link admitConnect} let through, or undefined. */
export function tunnelAdmissionOf (raw: object): TunnelAdmission | undefined {
  return tunnelAdmissions.get(raw)
}

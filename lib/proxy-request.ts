import type { IncomingMessage } from 'node:http'
import type { Http2ServerRequest } from 'node:http2'
import type { ForwardProxyDestination } from '../types/destination'
import { parseConnectTarget } from './connect/connect-target'
import { isAbsoluteForm, parseAbsoluteTarget, type AbsoluteTarget, type AbsoluteTargetProblem } from './forward/absolute-target'
import { interceptedTunnelOf } from './interception/intercepted-tunnels'
import { classifyInTunnelRequest, type InterceptedRequestTarget } from './interception/in-tunnel-request'

/** A raw request as either Node server hands it to Fastify. */
export type RawRequest = IncomingMessage | Http2ServerRequest

/** A CONNECT request; `destination` is null when its target is malformed. */
export interface ConnectRequestTarget {
  readonly kind: 'connect'
  readonly destination: ForwardProxyDestination | null
}

/** An absolute-form request; `target` names the problem when it cannot be forwarded. */
export interface ForwardRequestTarget {
  readonly kind: 'forward'
  readonly target: AbsoluteTarget | AbsoluteTargetProblem
}

export type { InterceptedRequestTarget } from './interception/in-tunnel-request'

/** What the proxy makes of a request addressed to it (not to the application). */
export type ProxyRequestTarget = ConnectRequestTarget | ForwardRequestTarget | InterceptedRequestTarget

const classified = new WeakMap<RawRequest, ProxyRequestTarget | null>()

/**
 * Classifies a raw request once: a request inside an intercepted tunnel (always the proxy's,
 * whatever its form), a CONNECT, an absolute-form request, or null for the application's own
 * (origin-form or asterisk-form) requests. The answer is cached per request
 * because the router, the handler and `request.proxyDestination` all ask.
 */
export function proxyRequestTargetOf (req: RawRequest): ProxyRequestTarget | null {
  let target = classified.get(req)
  if (target === undefined) {
    target = classify(req)
    classified.set(req, target)
  }
  return target
}

function classify (req: RawRequest): ProxyRequestTarget | null {
  const tunnel = interceptedTunnelOf(req)
  if (tunnel !== undefined) return classifyInTunnelRequest(req, tunnel.interception.destination)
  const url = req.url ?? ''
  if (req.method === 'CONNECT') {
    // Extended CONNECT (RFC 8441, `:protocol`) opens a WebSocket or the like at a path of the
    // application; it is not a tunnel request and is never intercepted.
    if (req.headers[':protocol'] !== undefined) return null
    return { kind: 'connect', destination: parseConnectTarget(url) }
  }
  if (isAbsoluteForm(url)) return { kind: 'forward', target: parseAbsoluteTarget(url) }
  return null
}

/** The destination of a proxy request, or null for the application's own requests and bad targets. */
export function proxyDestinationOf (req: RawRequest): ForwardProxyDestination | null {
  const target = proxyRequestTargetOf(req)
  if (target === null) return null
  if (target.kind === 'connect' || target.kind === 'intercepted') return target.destination
  return typeof target.target === 'string' ? null : target.target.destination
}

// What the proxy makes of a request: CONNECT, absolute-form or inside an intercepted tunnel, its
// parsed target, the tunnel it came through, and `request.proxyUser`.

import type { IncomingMessage } from 'node:http'
import type { Http2ServerRequest, Http2Session } from 'node:http2'
import type { Context } from '@opentelemetry/api'
import type { TLSSocket } from 'node:tls'
import type { FastifyInstance } from 'fastify'
import type { ForwardProxyDestination } from '../../types/destination'
import type { ForwardProxyInterception } from '../../types/interception'
import type { ForwardProxyUser } from '../../types/user'
import { canonicalHost, isEquivalentAuthority } from '../protocol/hosts'
import { ProxyError } from '../protocol/errors'
import { ObjectSlot } from '../protocol/object-slot'
import type { TunnelGrant } from '../security/tunnel-grant'

/** A raw request as either Node server hands it to Fastify. */
export type RawRequest = IncomingMessage | Http2ServerRequest

/** A CONNECT request; `destination` is null when its target is malformed. */
export interface ConnectRequestTarget {
  readonly kind: 'connect'
  readonly destination: ForwardProxyDestination | null
}

/** An absolute-form request; `target` names the problem when it cannot be forwarded. */
interface ForwardRequestTarget {
  readonly kind: 'forward'
  readonly target: AbsoluteTarget | AbsoluteTargetProblem
}

/** What the proxy makes of a request addressed to it (not to the application). */
export type ProxyRequestTarget = ConnectRequestTarget | ForwardRequestTarget | InterceptedRequestTarget

const classified = new ObjectSlot<ProxyRequestTarget | null>('target')

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
  const http2Target = httpSchemeTargetOverTls(req)
  return http2Target === null ? null : { kind: 'forward', target: http2Target }
}

/**
 * The path every CONNECT is routed under, and so its `request.url` in the application's hooks.
 * Fastify's router takes origin-form paths (and, today, absolute `http(s)://` URLs) and answers
 * any other target with its own 400 before a hook or route runs; a CONNECT's target is
 * `host:port`. Routing CONNECT under a fixed path keeps it from depending on how a router version
 * treats other targets: the proxy's CONNECT route (`*`, held by its router constraint) matches it
 * whatever the path.
 */
const CONNECT_ROUTING_PATH = '/'

const connectTargets = new ObjectSlot<string>('connectTarget')

/**
 * Readies a CONNECT (HTTP/1.1, or HTTP/2 with its `:authority` as `url`) for Fastify's router:
 * it is classified by its target as received (the answer is cached, so nothing later reads
 * `url` for it), the target is kept as `originalUrl` (Fastify's `request.originalUrl`, as for a
 * rewritten URL) and `url` becomes {@link CONNECT_ROUTING_PATH}. Set on the request object only:
 * an HTTP/2 request's `url` setter would write a `:path` into its headers.
 */
export function routeUnderConnectPath (req: RawRequest): void {
  const received = req.url ?? ''
  proxyRequestTargetOf(req)
  connectTargets.set(req, received)
  if (req.httpVersionMajor === 2) {
    Object.defineProperty(req, 'originalUrl', ownField(received))
    Object.defineProperty(req, 'url', ownField(CONNECT_ROUTING_PATH))
    return
  }
  // An HTTP/1.1 request's url is a plain field: assigned, without a property descriptor each.
  const http1 = req as IncomingMessage & { originalUrl?: string }
  http1.originalUrl = received
  http1.url = CONNECT_ROUTING_PATH
}

function ownField (value: string): PropertyDescriptor {
  return { value, writable: true, configurable: true, enumerable: true }
}

/** The request target as the client sent it: a CONNECT's `host:port` (routed under `/`), otherwise `url`. */
export function requestTargetAsReceived (req: RawRequest): string {
  return connectTargets.get(req) ?? req.url ?? ''
}

/**
 * An HTTP/2 request with `:scheme http` on a TLS connection is the HTTP/2 form of an
 * absolute-form `http://` request: the `:scheme` may differ from the connection's (RFC 9113
 * section 8.3.1), and that is how a browser using an https:// proxy that speaks HTTP/2 sends an
 * http:// URL. Its target is `http://<:authority><:path>`. Null for every other request: on a
 * cleartext connection `:scheme http` is the application's own.
 */
function httpSchemeTargetOverTls (req: RawRequest): AbsoluteTarget | AbsoluteTargetProblem | null {
  if (req.headers[':scheme'] !== 'http') return null
  const { stream } = req as Partial<Http2ServerRequest>
  if (stream?.session?.encrypted !== true) return null
  const authority = req.headers[':authority']
  if (typeof authority !== 'string' || authority === '') return 'malformed'
  return parseAbsoluteTarget(`http://${authority}${req.url ?? ''}`)
}

/** The destination of a proxy request, or null for the application's own requests and bad targets. */
export function proxyDestinationOf (req: RawRequest): ForwardProxyDestination | null {
  const target = proxyRequestTargetOf(req)
  if (target === null) return null
  if (target.kind === 'connect' || target.kind === 'intercepted') return target.destination
  return typeof target.target === 'string' ? null : target.target.destination
}

/** What the requests of one intercepted tunnel inherit from the CONNECT that opened it. */
export interface InterceptedTunnel {
  /** `request.interception` of every request inside (one frozen object per tunnel). */
  readonly interception: ForwardProxyInterception
  /**
   * Who may use the tunnel: the user who opened it (`request.proxyUser` inside, null without
   * auth), checked again for the first request after each reconfiguration.
   */
  readonly grant: TunnelGrant
  /** The address of the client that opened the tunnel, for the access log of requests inside. */
  readonly clientAddress: string | undefined
  /** The tunnel's trace context: the parent of the spans of requests inside that bring none. */
  readonly traceContext: Context | undefined
}

// Kept on the endpoint's connection objects: the TLS socket (HTTP/1.1 requests name it as
// their socket) and the HTTP/2 session (HTTP/2 requests reach it through their stream).
const tunnels = new ObjectSlot<InterceptedTunnel>('interceptedTunnel')

/** Records that `connection` (a terminated TLS socket or its HTTP/2 session) carries `tunnel`. */
export function rememberInterceptedConnection (connection: TLSSocket | Http2Session, tunnel: InterceptedTunnel): void {
  tunnels.set(connection, tunnel)
}

/** The raw-request shapes this module reads: an HTTP/1.1 request or an HTTP/2 compatibility request. */
interface RawRequestLike {
  readonly socket?: unknown
  readonly stream?: { readonly session?: unknown }
}

/**
 * The intercepted tunnel a raw request came through, or undefined for every other request
 * (the application's own, forwarding, CONNECT on the proxy's listeners).
 */
export function interceptedTunnelOf (req: object): InterceptedTunnel | undefined {
  const { stream, socket } = req as RawRequestLike
  // An HTTP/2 request's `socket` is a proxy object, never the TLS socket itself: use its session.
  const connection = stream !== undefined ? stream.session : socket
  return typeof connection === 'object' && connection !== null ? tunnels.get(connection) : undefined
}

// Users set by authentication (or by the application), per request.
const assigned = new ObjectSlot<ForwardProxyUser | null>('proxyUser')

/**
 * Decorates `request.proxyUser`: what authentication (or the application) set on this request;
 * otherwise, inside an intercepted tunnel, the user who opened the tunnel,
 * known before any hook runs, whatever order the application's hooks were added in; else null.
 */
export function decorateProxyUser (fastify: FastifyInstance): void {
  fastify.decorateRequest('proxyUser', {
    getter (this: { raw: object }): ForwardProxyUser | null {
      const user = assigned.get(this)
      if (user !== undefined) return user
      return interceptedTunnelOf(this.raw)?.grant.user ?? null
    },
    setter (this: object, user: ForwardProxyUser | null | undefined) {
      // Kept as null when cleared, so a value is there once set: the getter needs no second
      // lookup (an `in` test on a request object is a slow lookup through its prototypes).
      assigned.set(this, user ?? null)
    }
  })
}

/**
 * Parses an authority-form CONNECT target (`host:port`, `[v6]:port`). The port is required
 * (1 to 65535, digits only). Userinfo, schemes, paths, percent-encoding and non-ASCII are
 * refused. Returns null when the target is not acceptable.
 */
export function parseConnectTarget (target: string): ForwardProxyDestination | null {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~-]+):([0-9]{1,5})$/.exec(target)
  if (match === null) return null
  const [, rawHost = '', rawPort = ''] = match
  const port = Number(rawPort)
  if (port < 1 || port > 65535) return null
  const host = canonicalHost(rawHost)
  if (host === null) return null
  return { host, port }
}

/** An absolute-form `http://` request target, split for forwarding. */
export interface AbsoluteTarget {
  readonly destination: ForwardProxyDestination
  /** Path and query exactly as received (never normalized); `/` when the target had none. */
  readonly pathAndQuery: string
}

/** Why an absolute-form target cannot be forwarded. */
export type AbsoluteTargetProblem = 'https-scheme' | 'unsupported-scheme' | 'malformed'

const ABSOLUTE_FORM = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^#]*)$/

/** True when a request target is in absolute form (`scheme://...`). */
function isAbsoluteForm (target: string): boolean {
  return /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(target)
}

/**
 * Parses an absolute-form target. Only `http` is forwarded; `https` must use CONNECT
 * instead. Userinfo, fragments, bad ports and hosts that do not canonicalize are refused.
 */
function parseAbsoluteTarget (target: string): AbsoluteTarget | AbsoluteTargetProblem {
  const match = ABSOLUTE_FORM.exec(target)
  if (match === null) return 'malformed'
  const [, scheme = '', authority = '', rest = ''] = match
  const lowerScheme = scheme.toLowerCase()
  if (lowerScheme === 'https') return 'https-scheme'
  if (lowerScheme !== 'http') return 'unsupported-scheme'
  const authorityMatch = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~-]+)(?::([0-9]{0,5}))?$/.exec(authority)
  if (authorityMatch === null) return 'malformed'
  const [, rawHost = '', rawPort] = authorityMatch
  const port = rawPort === undefined || rawPort === '' ? 80 : Number(rawPort)
  if (port < 1 || port > 65535) return 'malformed'
  const host = canonicalHost(rawHost)
  if (host === null) return 'malformed'
  const pathAndQuery = rest === '' ? '/' : rest.startsWith('?') ? `/${rest}` : rest
  return { destination: { host, port }, pathAndQuery }
}

/** Why a request inside an intercepted tunnel cannot be forwarded: only origin-form requests for the CONNECT target are. */
export type InTunnelProblem = 'not-origin-form' | 'connect' | 'extended-connect' | 'missing-host' | 'misdirected'

/** A request inside an intercepted tunnel. */
export interface InterceptedRequestTarget {
  readonly kind: 'intercepted'
  /** The CONNECT target of the tunnel; every request inside goes there or nowhere. */
  readonly destination: ForwardProxyDestination
  /** The path and query as received (origin-form). */
  readonly pathAndQuery: string
  /** Null when the request may be forwarded. */
  readonly problem: InTunnelProblem | null
}

/** The raw-request fields read here (an HTTP/1.1 request or an HTTP/2 compatibility request). */
interface RawInTunnelRequest {
  readonly method?: string
  readonly url?: string
  readonly headers: Record<string, string | string[] | undefined>
}

/**
 * Classifies a request that came through an intercepted tunnel: only origin-form is accepted
 * (absolute-form, asterisk-form and a CONNECT inside are refused), extended CONNECT
 * (`:protocol`, WebSockets over HTTP/2) is refused, and `Host` and `:authority` must name the
 * CONNECT target once case, a trailing dot and the default port 443 are normalized: anything
 * else is misdirected, never sent elsewhere.
 */
function classifyInTunnelRequest (req: RawInTunnelRequest, destination: ForwardProxyDestination): InterceptedRequestTarget {
  const url = req.url ?? ''
  let problem: InTunnelProblem | null
  if (req.method === 'CONNECT') problem = req.headers[':protocol'] === undefined ? 'connect' : 'extended-connect'
  else if (!url.startsWith('/')) problem = 'not-origin-form'
  else problem = authorityProblem(req.headers[':authority'], req.headers.host, destination)
  return { kind: 'intercepted', destination, pathAndQuery: url, problem }
}

/**
 * Null when every `:authority` and `Host` value names `destination` (at least one must be
 * there), else why not. Written out for the usual single string: this runs for every request
 * inside an intercepted tunnel.
 */
function authorityProblem (
  authority: string | string[] | undefined,
  host: string | string[] | undefined,
  destination: ForwardProxyDestination
): InTunnelProblem | null {
  if (valueCount(authority) + valueCount(host) === 0) return 'missing-host'
  return namesDestination(authority, destination) && namesDestination(host, destination) ? null : 'misdirected'
}

function valueCount (value: string | string[] | undefined): number {
  return value === undefined ? 0 : typeof value === 'string' ? 1 : value.length
}

/** True when `value` is absent or each of its values names `destination` (default port 443). */
function namesDestination (value: string | string[] | undefined, destination: ForwardProxyDestination): boolean {
  if (value === undefined) return true
  if (typeof value === 'string') return isEquivalentAuthority(value, destination, 443)
  return value.every((one) => isEquivalentAuthority(one, destination, 443))
}

const PROBLEMS: Record<InTunnelProblem, () => ProxyError> = {
  'not-origin-form': () => new ProxyError('http_request_error', 'Requests inside an intercepted tunnel must use origin-form targets.', { details: 'not origin-form' }),
  connect: () => new ProxyError('http_request_error', 'CONNECT is not allowed inside an intercepted tunnel.', { details: 'CONNECT inside an intercepted tunnel' }),
  'extended-connect': () => new ProxyError('http_request_error', 'WebSockets over HTTP/2 are not supported inside an intercepted tunnel.', { details: 'extended CONNECT inside an intercepted tunnel' }),
  'missing-host': () => new ProxyError('http_request_error', 'The request names no host.', { details: 'no Host or :authority' }),
  misdirected: () => new ProxyError('http_request_error', 'The request names another host than the tunnel was opened to.', { status: 421, details: 'Host does not match the CONNECT target' })
}

/** The error a request with `problem` is answered with (400, or 421 for a misdirected request). */
export function inTunnelProblemError (problem: InTunnelProblem): ProxyError {
  return PROBLEMS[problem]()
}

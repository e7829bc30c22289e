// The proxy route: its router constraint, the methods and head limits it accepts, bodies kept
// unparsed, authentication, and the error handler that answers every failure with a status and
// `Proxy-Status`.

import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HTTPMethods,
  onRequestHookHandler,
  FastifyError,
  onSendHookHandler,
  preParsingHookHandler
} from 'fastify'
import { type IncomingMessage, METHODS } from 'node:http'
import type { ProxyRuntime } from './core/runtime'
import { interceptedTunnelOf, proxyRequestTargetOf, requestTargetAsReceived, type RawRequest } from './core/proxy-request'
import { registerProxyAuthentication, proxyAuthenticateChallenge } from './security/proxy-auth'
import { admitConnect, openConnectTunnel, releaseUnopenedTunnel } from './connect/tunnel'
import { forwardAbsoluteRequest } from './forward/forward-handler'
import { forwardInterceptedRequest, inTunnelUpgradeOf } from './interception/endpoint'
import { forwardWebSocketUpgrade } from './forward/websocket-upgrade'
import { beginProxyRequest, finishProxyRequest, noteProxyError, scrubbedSecretsOf } from './telemetry/request-telemetry'
import { ProxyError, isProxyError, refusedBy } from './protocol/errors'
import { sendProxyError } from './protocol/error-responses'
import type { ResolvedProxySettings } from './core/options'
import { recordProxyFailure } from './telemetry/metrics'
import { certificateErrorHint } from './forward/destinations'
import { discardForwardedResponse, isForwardedBody, isForwardedReply, replyHeaderRecord, responseScrubberOf } from './forward/forwarded-response'
import { scrubReplyHeaders } from './forward/scrubbed-response'
import { HOP_BY_HOP, hopByHopNamesOfObject } from './forward/outgoing-head'

/**
 * The proxy's own encapsulated context: one catch-all route that only proxy requests can match,
 * bodies left unparsed (they are streamed, never buffered, whatever their Content-Type says), authentication as the route's
 * onRequest hook (after the application's own hooks), and an error handler that answers every
 * failure with a status and `Proxy-Status`.
 */
export function proxyRoutes (runtime: ProxyRuntime) {
  return async function proxyRoutesPlugin (instance: FastifyInstance): Promise<void> {
    instance.removeAllContentTypeParsers()
    instance.addContentTypeParser('*', (request, _payload, done) => {
      restoreContentType(request.raw)
      done(null)
    })
    instance.setErrorHandler(createProxyErrorHandler(runtime.settings))
    const { auth } = runtime.settings
    const authenticate = auth === null ? undefined : authenticateOrRecheckTunnel(await registerProxyAuthentication(instance, auth.realm, () => runtime.settings.auth?.check ?? auth.check, auth.failureLimit, runtime.sharedLimits), runtime)

    instance.route({
      method: instance.supportedMethods as HTTPMethods[],
      url: '*',
      exposeHeadRoute: false,
      constraints: { [PROXY_CONSTRAINT]: PROXY_CONSTRAINT_VALUE },
      onRequest: admitProxyRequest(authenticate, runtime),
      preParsing: hideContentTypeFromFastify,
      onResponse: function finishProxyRequestHook (request, reply, done) {
        finishProxyRequest(request, reply)
        releaseUnopenedTunnel(request)
        done()
      },
      // Route-level hooks run after the application's: this one has the last word on the head.
      onSend: holdForwardedResponseHead,
      // Returning the reply tells Fastify the response is under way (it may still be streaming).
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        await handleProxyRequest(request, reply, runtime)
        return reply
      }
    })
  }
}

/**
 * The proxy route's last onSend hook. The application's onSend hooks run on forwarded
 * responses (`http://` and inside intercepted tunnels) and may change them; what they leave is
 * held to the rules of the destination's own head: hop-by-hop names and the names a
 * `Connection` header lists are removed whoever set them (a hook's `Connection` would otherwise
 * override the client's `Connection: close`), a secret's value in any header becomes its
 * placeholder (in names and values, with the scrubber the request was given: a value rotated
 * while it was in flight is still found), and a `Content-Length` no longer describes a body a hook replaced, so it is
 * removed (Fastify sets it again for a string or buffer, a stream goes chunked).
 */
const holdForwardedResponseHead: onSendHookHandler = function holdForwardedResponseHead (request, reply, payload, done) {
  if (!isForwardedReply(reply)) {
    done(null, payload)
    return
  }
  // An empty list of values writes no field. Not reply.removeHeader: it also removes the name
  // from the raw response, which tells Node never to write its own Connection,
  // Content-Length or Transfer-Encoding (the client's Connection: close would go unsaid).
  // The names a Connection header lists are only looked for when there is one (rarely): the
  // usual response costs ten lookups here.
  if (reply.hasHeader('connection') || reply.hasHeader('proxy-connection')) {
    const dropped = hopByHopNamesOfObject(replyHeaderRecord(reply))
    for (const name of Object.keys(reply.getHeaders())) {
      if (dropped.has(name)) reply.header(name, [])
    }
  } else {
    for (const name of HOP_BY_HOP) {
      if (reply.hasHeader(name)) reply.header(name, [])
    }
  }
  // A body a hook replaced: HEAD, 204 and 304 answers have none, and keep the destination's length.
  if (payload != null && !isForwardedBody(reply, payload) && reply.hasHeader('content-length')) reply.header('content-length', [])
  const scrubber = responseScrubberOf(reply)
  if (scrubber !== null) scrubReplyHeaders(reply, scrubber, scrubbedSecretsOf(request))
  done(null, payload)
}

/**
 * The proxy route's one onRequest hook (after the application's own), in this order:
 * the request's telemetry starts (so refused requests are logged and traced too), a head too
 * large to forward faithfully is refused ({@link oversizedHeadError}), the client is
 * authenticated, and a CONNECT is admitted (its slot taken, see `admitConnect`). One hook, not
 * four: each hook Fastify runs costs a call through its runner, and the usual request passes
 * every step without a promise or a turn of the event loop.
 */
function admitProxyRequest (authenticate: onRequestHookHandler | undefined, runtime: ProxyRuntime): onRequestHookHandler {
  const admit = (request: FastifyRequest, reply: FastifyReply, done: HookDone): void => {
    const target = proxyRequestTargetOf(request.raw)
    if (target?.kind !== 'connect') {
      done()
      return
    }
    admitConnect(request, reply, target, runtime).then(() => done(), done)
  }
  return function admitProxyRequestHook (this: FastifyInstance, request, reply, done) {
    beginProxyRequest(request)
    const oversized = oversizedHeadError(request.raw)
    if (oversized !== null) {
      done(oversized)
      return
    }
    if (authenticate === undefined) {
      admit(request, reply, done)
      return
    }
    authenticate.call(this, request, reply, (error?: Error) => {
      if (error !== undefined && error !== null) done(error)
      else admit(request, reply, done)
    })
  }
}

/** The callback a Fastify hook is given. */
type HookDone = Parameters<onRequestHookHandler>[2]

/**
 * Authenticates a proxy request, except inside an intercepted tunnel: those requests carry no
 * credentials of their own, the tunnel's user was authenticated when it opened. After a
 * reconfiguration, the first request of such a tunnel has that user checked again (the
 * tunnel's credentials against the users or `validate` now in force, see TunnelGrant), so a
 * removed user, a changed password or a narrowed policy applies inside tunnels already open; a
 * user no longer admitted gets 403 and the tunnel is closed once the answer is out. The usual
 * request passes without a promise.
 */
function authenticateOrRecheckTunnel (authenticate: onRequestHookHandler, runtime: ProxyRuntime): onRequestHookHandler {
  return function authenticateProxyRequest (this: FastifyInstance, request, reply, done) {
    const tunnel = interceptedTunnelOf(request.raw)
    if (tunnel === undefined) return authenticate.call(this, request, reply, done)
    const refuse = (): void => {
      closeTunnelAfterAnswer(request, reply)
      done(refusedBy('auth', new ProxyError('http_request_denied', 'The user of this tunnel is no longer allowed.', { details: 'tunnel user no longer allowed' })))
    }
    const granted = tunnel.grant.stillGranted(runtime.settings)
    if (granted === true) done()
    else if (granted === false) refuse()
    else granted.then((still) => { if (still) done(); else refuse() }, refuse)
  }
}

/**
 * Ends the intercepted connection a request came on once its answer is out: an HTTP/2 session
 * gets GOAWAY (streams in flight finish), an HTTP/1.1 connection is ended after the response.
 */
function closeTunnelAfterAnswer (request: FastifyRequest, reply: FastifyReply): void {
  const raw = request.raw as RawRequest
  if ('stream' in raw) {
    raw.stream.session?.close()
    return
  }
  const { socket } = raw
  reply.raw.once('finish', () => socket.end())
}

// Not async: the promise of the path taken is handed on, not awaited again (one promise less per request).
function handleProxyRequest (request: FastifyRequest, reply: FastifyReply, runtime: ProxyRuntime): Promise<void> {
  restoreContentType(request.raw)
  const target = proxyRequestTargetOf(request.raw)
  if (target === null) throw new Error('proxy route reached by a request that is not a proxy request')
  if (target.kind === 'connect') return openConnectTunnel(request, reply, runtime)
  if (target.kind === 'intercepted') {
    const upgrade = inTunnelUpgradeOf(request.raw)
    if (upgrade?.websocket === true && target.problem === null) return forwardWebSocketUpgrade(request, reply, runtime, target, upgrade)
    return forwardInterceptedRequest(request, reply, target, runtime)
  }
  return forwardAbsoluteRequest(request, reply, target.target, runtime)
}

/** Name of the router constraint that sends proxy requests to the proxy route only. */
export const PROXY_CONSTRAINT = 'fastifyForwardProxy'

/** The constraint value every proxy request derives. */
export const PROXY_CONSTRAINT_VALUE = 'proxy'

/**
 * Router constraint that keeps proxy requests away from the application's own routes. A
 * CONNECT, an absolute-form request or a request inside an intercepted tunnel derives the value
 * `proxy`; because the strategy must match when derived, such a request can only match a route
 * that declares the constraint, so `GET http://example.com/healthz` is forwarded, never served
 * by the app's `/healthz`. Origin-form requests to the proxy itself derive nothing and route as
 * usual.
 */
export const proxyRouteConstraint: Parameters<FastifyInstance['addConstraintStrategy']>[0] = {
  name: PROXY_CONSTRAINT,
  mustMatchWhenDerived: true,
  storage () {
    const handlers = new Map<unknown, Parameters<ReturnType<typeof this.storage>['set']>[1]>()
    return {
      get: (value) => handlers.get(value) ?? null,
      set: (value, handler) => { handlers.set(value, handler) }
    }
  },
  deriveConstraint (req) {
    // find-my-way treats undefined as "nothing derived"; its typings do not say so.
    return proxyRequestTargetOf(req as RawRequest) === null ? undefined : PROXY_CONSTRAINT_VALUE
  },
  validate (value: unknown) {
    if (value !== PROXY_CONSTRAINT_VALUE) throw new Error(`${PROXY_CONSTRAINT} constraint only takes "${PROXY_CONSTRAINT_VALUE}"`)
  }
}

/**
 * Turns anything thrown while handling a proxy request into the response the client sees: the
 * ProxyError itself, 407 for authentication failures, the framework's own 4xx for malformed
 * requests, and 500 `proxy_internal_error` for anything unexpected (logged, never shown).
 */
export function toProxyError (error: unknown): ProxyError {
  if (isProxyError(error)) return error
  const statusCode = (error as Partial<FastifyError>).statusCode
  if (statusCode === 407) return new ProxyError('http_request_denied', 'Proxy authentication required.', { status: 407 })
  if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) {
    return new ProxyError('http_request_error', 'The request is malformed.', { status: statusCode, cause: error })
  }
  return new ProxyError('proxy_internal_error', 'The proxy failed to handle the request.', { cause: error })
}

/** Builds the error handler of the proxy route's encapsulated context. */
export function createProxyErrorHandler (settings: ResolvedProxySettings) {
  return function proxyErrorHandler (error: unknown, request: FastifyRequest, reply: FastifyReply): void {
    const proxyError = toProxyError(error)
    logProxyError(request, proxyError)
    recordProxyFailure(proxyError, error)
    noteProxyError(request, proxyError)
    if (reply.raw.headersSent) {
      // The head is out: the only honest signal left is an aborted message.
      reply.raw.destroy()
      return
    }
    discardForwardedResponse(reply)
    const extra: Record<string, string> = proxyError.status === 407 && settings.auth !== null
      ? { 'proxy-authenticate': proxyAuthenticateChallenge(settings.auth.realm) }
      : {}
    // A 408 leaves the request body unread: the HTTP/1.1 connection cannot carry another request.
    if (proxyError.status === 408 && request.raw.httpVersionMajor === 1) extra.connection = 'close'
    if (proxyError.retryAfter !== undefined) extra['retry-after'] = String(proxyError.retryAfter)
    sendProxyError(reply, settings.pseudonym, proxyError, extra)
  }
}

function logProxyError (request: FastifyRequest, error: ProxyError): void {
  const cause = error.cause as (Error & { code?: string }) | undefined
  const fields = { proxyStatus: error.errorType, status: error.status, cause: cause === undefined ? undefined : { name: cause.name, code: cause.code, message: cause.message }, hint: certificateErrorHint(error) }
  if (error.status >= 500 && error.errorType === 'proxy_internal_error') request.log.error({ ...fields, err: cause }, error.message)
  else if (error.status >= 500) request.log.warn(fields, error.message)
  else request.log.info(fields, error.message)
}

/** Longest request target (the URL or CONNECT authority) forwarded: RFC 9112 section 3's 8,000 octets, rounded up. */
export const MAX_REQUEST_TARGET_LENGTH = 8192

// Node's default `server.maxHeadersCount`.
const NODE_MAX_HEADERS_COUNT = 2000

/**
 * The refusal of an HTTP/1.1 proxy request whose head is too large to handle faithfully, before
 * it is authenticated or forwarded, or null:
 * - a request target over {@link MAX_REQUEST_TARGET_LENGTH}: 414 `http_request_error`;
 * - a header count that reached the server's `maxHeadersCount` (by default 1,000 lines): 431
 *   `http_request_error`. Node 20 silently drops the lines past it while its parser still frames
 *   the message by them, so a `Transfer-Encoding` or `Content-Length` past the limit would
 *   frame a body the proxy never sees. (Recent Node 22 and 24 releases refuse such a head in
 *   the parser, `HPE_HEADER_OVERFLOW`, and it never gets here.)
 */
function oversizedHeadError (raw: RawRequest): ProxyError | null {
  if (raw.httpVersionMajor !== 1) return null
  if (requestTargetAsReceived(raw).length > MAX_REQUEST_TARGET_LENGTH) {
    return new ProxyError('http_request_error', 'The request target is too long.', { status: 414, details: 'request target too long' })
  }
  const limit = maxHeadersCountOf(raw as IncomingMessage)
  // Node applies the limit to `rawHeaders` entries (names and values), in batches of 32 lines.
  if (limit > 0 && raw.rawHeaders.length >= limit) {
    return new ProxyError('http_request_error', 'The request has too many header fields.', { status: 431, details: 'too many header fields' })
  }
  return null
}

function maxHeadersCountOf (raw: IncomingMessage): number {
  const server = (raw.socket as { server?: { maxHeadersCount?: number | null } } | null)?.server
  const configured = server?.maxHeadersCount
  return typeof configured === 'number' ? configured : NODE_MAX_HEADERS_COUNT
}

/**
 * Makes every method Node's HTTP parser accepts (WebDAV's PROPFIND, PURGE, LINK, ...) known
 * to Fastify, so the proxy route can forward it; Fastify's default list is much shorter and an
 * absolute-form request with any other method would get the framework's 404 instead. Added
 * methods are declared as carrying a body, so an application route using one parses it as usual.
 */
export function addForwardedMethods (fastify: FastifyInstance): void {
  for (const method of METHODS) {
    if (method !== 'CONNECT' && !fastify.supportedMethods.includes(method)) fastify.addHttpMethod(method, { hasBody: true })
  }
}

/**
 * Fastify answers 415 to a `Content-Type` its own parser finds malformed, and 400 to a QUERY
 * without one, before any content-type parser runs. A proxy must forward such requests as they
 * are (the destination decides), so for the proxy route only the header is swapped for a media
 * type that lands in the proxy's catch-all parser, which puts the original back at once. The
 * application's preParsing hooks run before the swap and its later hooks after the restore, so
 * none of them sees the placeholder; it is back before forwarding compares `request.headers`
 * with the headers as received.
 */
const PLACEHOLDER_MEDIA_TYPE = 'application/x-fastify-forward-proxy-opaque'

/** Fastify's default bodyless methods, for which it never looks at Content-Type. */
const METHODS_WITHOUT_BODY_PARSING = new Set(['GET', 'HEAD', 'TRACE', 'CONNECT'])

const hiddenContentType = Symbol('fastify-forward-proxy.hiddenContentType')

type RequestWithHiddenContentType = IncomingMessage & { [hiddenContentType]?: string | undefined }

/** Route-level `preParsing` hook of the proxy route: hides the client's Content-Type from Fastify. */
export const hideContentTypeFromFastify: preParsingHookHandler = function (request, _reply, payload, done) {
  const raw = request.raw as RequestWithHiddenContentType
  if (!METHODS_WITHOUT_BODY_PARSING.has(raw.method ?? '')) {
    raw[hiddenContentType] = raw.headers['content-type']
    raw.headers['content-type'] = PLACEHOLDER_MEDIA_TYPE
  }
  done(null, payload)
}

/** Puts back the Content-Type hidden by {@link hideContentTypeFromFastify}; does nothing twice. */
export function restoreContentType (rawRequest: IncomingMessage): void {
  const raw = rawRequest as RequestWithHiddenContentType
  if (!(hiddenContentType in raw)) return
  const original = raw[hiddenContentType]
  delete raw[hiddenContentType]
  if (original === undefined) delete raw.headers['content-type']
  else raw.headers['content-type'] = original
}

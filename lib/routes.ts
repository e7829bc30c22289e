// The proxy route: its encapsulated context (bodies left unparsed, the error handler), the one
// onRequest hook (telemetry, head size, authentication, a CONNECT's admission and interception
// decision), the handler that sends each kind of proxy request its way, and the methods it accepts.

import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HTTPMethods,
  onRequestHookHandler,
  onResponseHookHandler
} from 'fastify'
import { METHODS } from 'node:http'
import type { ProxyRuntime } from './core/runtime'
import { interceptedTunnelOf, proxyRequestTargetOf, type RawRequest } from './core/proxy-request'
import { registerProxyAuthentication } from './security/proxy-auth'
import { admitConnect, releaseUnopenedTunnel } from './connect/admission'
import { openConnectTunnel } from './connect/tunnel'
import { decideTunnelInterception } from './interception/tunnel-decision'
import { forwardAbsoluteRequest, sendForwardingFailure } from './forward/forward-handler'
import { forwardInterceptedRequest, inTunnelUpgradeOf } from './interception/endpoint'
import { forwardWebSocketUpgrade } from './forward/websocket-upgrade'
import { beginProxyRequest, finishProxyRequest } from './telemetry/request-telemetry'
import { ProxyError, asError, internalFailure } from './protocol/errors'
import { refusedBy } from './protocol/refusals'
import { holdForwardedResponseHead } from './forward/forwarded-head-rules'
import { PROXY_CONSTRAINT, PROXY_CONSTRAINT_VALUE } from './proxy-route-constraint'
import { createProxyErrorHandler } from './proxy-error-handler'
import { oversizedHeadError } from './oversized-head'
import { unmetExpectationError } from './protocol/unmet-expectation'
import { hideContentTypeFromFastify, leaveBodiesUnparsed, METHODS_WITHOUT_BODY_PARSING, restoreContentType } from './opaque-content-type'

/**
 * The proxy's own encapsulated context: catch-all routes that only proxy requests can match (one
 * for the methods Fastify parses no body for, one for the others, one for CONNECT), bodies left
 * unparsed (they are streamed, never buffered, whatever their Content-Type says), authentication
 * in the routes' onRequest hook (after the application's own hooks), and an error handler that
 * answers every failure with a status and `Proxy-Status`.
 */
export function proxyRoutes (runtime: ProxyRuntime) {
  return async function proxyRoutesPlugin (instance: FastifyInstance): Promise<void> {
    leaveBodiesUnparsed(instance)
    instance.setErrorHandler(createProxyErrorHandler(runtime.settings))
    const { auth } = runtime.settings
    const authenticate = auth === null
      ? undefined
      : authenticateOrRecheckTunnel(await registerProxyAuthentication(
        instance,
        auth.realm,
        () => runtime.settings.auth?.check ?? auth.check,
        auth.failureLimit,
        runtime.sharedLimits
      ), runtime)

    const finishProxyRequestHook: onResponseHookHandler = function finishProxyRequestHook (request, reply, done) {
      finishProxyRequest(request, reply)
      done()
    }
    const finishConnectHook: onResponseHookHandler = function finishConnectHook (request, reply, done) {
      finishProxyRequest(request, reply)
      releaseUnopenedTunnel(request)
      done()
    }
    const constraints = { [PROXY_CONSTRAINT]: PROXY_CONSTRAINT_VALUE }
    const methods = instance.supportedMethods.filter((method) => method !== 'CONNECT') as HTTPMethods[]
    const forwardRoute = {
      url: '*',
      exposeHeadRoute: false,
      constraints,
      onRequest: admitProxyRequest(authenticate, runtime),
      onResponse: finishProxyRequestHook,
      // Route-level hooks run after the application's: this one has the last word on the head.
      onSend: holdForwardedResponseHead,
      // Returns nothing (no promise per request for Fastify to wrap): the path taken sends the
      // reply, and its failure goes through the reply to the error handler, as a rejected
      // handler's would; what it throws at once, Fastify sends there itself.
      handler: function forwardProxyRequest (request: FastifyRequest, reply: FastifyReply) {
        handleProxyRequest(request, reply, runtime)?.then(undefined, (error: unknown) => { sendForwardingFailure(reply, error) })
      }
    }
    // The methods whose Content-Type Fastify never reads get the route without the preParsing
    // hook that hides it: a stage Fastify skips (no bound function, no hook run per request).
    instance.route({ ...forwardRoute, method: methods.filter((method) => METHODS_WITHOUT_BODY_PARSING.has(method)) })
    instance.route({ ...forwardRoute, method: methods.filter((method) => !METHODS_WITHOUT_BODY_PARSING.has(method)), preParsing: hideContentTypeFromFastify })
    // Tunnel requests get a route of their own, with only the hooks a CONNECT reaches: it has no
    // body to parse, and its answer is either a tunnel (the reply hijacked, no onSend) or a
    // refusal from the error handler. The handler returns nothing (no promise per CONNECT); a
    // failure before the 200 is sent through the reply, to the error handler.
    instance.route({
      method: 'CONNECT',
      // Any path: an application's rewriteUrl may have moved it from where the listener routed it.
      url: '*',
      exposeHeadRoute: false,
      constraints,
      onRequest: admitProxyRequest(authenticate, runtime, admitTunnel(runtime)),
      onResponse: finishConnectHook,
      handler: function openTunnel (request: FastifyRequest, reply: FastifyReply) {
        openConnectTunnel(request, reply, runtime, (error) => reply.send(asError(error)))
      }
    })
  }
}

/**
 * A proxy route's one onRequest hook (after the application's own), in this order:
 * the request's telemetry starts (so refused requests are logged and traced too), a head too
 * large to forward faithfully is refused (`oversizedHeadError`), the client is
 * authenticated, and then `admit` runs when given: on the CONNECT route the CONNECT is admitted
 * there (see {@link admitTunnel}). One hook, not several: each hook Fastify runs costs a call
 * through its runner, and the usual request passes every step without a promise or a turn of
 * the event loop.
 */
function admitProxyRequest (authenticate: onRequestHookHandler | undefined, runtime: ProxyRuntime, admit?: AdmissionStep): onRequestHookHandler {
  const next: AdmissionStep = admit ?? ((_request, _reply, done) => { done() })
  return function admitProxyRequestHook (this: FastifyInstance, request, reply, done) {
    beginProxyRequest(request, runtime.capture)
    const oversized = oversizedHeadError(request.raw)
    if (oversized !== null) {
      done(oversized)
      return
    }
    if (authenticate === undefined) {
      next(request, reply, done)
      return
    }
    authenticate.call(this, request, reply, (error?: Error) => {
      if (error !== undefined && error !== null) done(error)
      else next(request, reply, done)
    })
  }
}

/** The last step of a proxy route's onRequest hook, after authentication. */
type AdmissionStep = (request: FastifyRequest, reply: FastifyReply, done: HookDone) => void

/**
 * The CONNECT route's admission step: the CONNECT is admitted (its slot taken, see
 * `admitConnect`) and, with tlsInterception, its interception decided, so every later hook
 * sees the decision.
 */
function admitTunnel (runtime: ProxyRuntime): AdmissionStep {
  const decideInterception = decideTunnelInterception(runtime)
  return (request, reply, done) => {
    const target = proxyRequestTargetOf(request.raw)
    if (target?.kind !== 'connect') {
      done()
      return
    }
    admitConnect(request, reply, target, runtime, (error) => {
      if (error === undefined) decideInterception.call(request.server, request, reply, done)
      else done(error)
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

// Not async: the path taken returns a promise only when it waited for something (none on the usual request).
function handleProxyRequest (request: FastifyRequest, reply: FastifyReply, runtime: ProxyRuntime): Promise<void> | undefined {
  restoreContentType(request.raw)
  const target = proxyRequestTargetOf(request.raw)
  if (target === null) throw internalFailure('proxy route reached by a request that is not a proxy request')
  if (target.kind === 'connect') throw internalFailure('a CONNECT reached the route of other proxy requests')
  const unmet = unmetExpectationError(request.raw)
  if (unmet !== null) throw unmet
  if (target.kind === 'intercepted') {
    const upgrade = inTunnelUpgradeOf(request.raw)
    if (upgrade?.websocket === true && target.problem === null) return forwardWebSocketUpgrade(request, reply, runtime, target, upgrade)
    return forwardInterceptedRequest(request, reply, target, runtime)
  }
  return forwardAbsoluteRequest(request, reply, target.target, runtime)
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

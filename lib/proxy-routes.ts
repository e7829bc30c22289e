import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods, onRequestHookHandler } from 'fastify'
import type { ProxyRuntime } from './proxy-runtime'
import { proxyRequestTargetOf } from './proxy-request'
import { PROXY_CONSTRAINT, PROXY_CONSTRAINT_VALUE } from './proxy-route-constraint'
import { createProxyErrorHandler } from './proxy-error-handler'
import { registerProxyAuthentication } from './security/proxy-auth'
import { openConnectTunnel } from './connect/connect-handler'
import { forwardAbsoluteRequest } from './forward/forward-handler'
import { forwardInterceptedRequest } from './interception/intercepted-request'
import { refuseOversizedHead } from './forward/request-head-limits'
import { hideContentTypeFromFastify, restoreContentType } from './forward/opaque-content-type'
import { beginProxyRequest, finishProxyRequest } from './diagnostics/request-telemetry'

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
    // Before the route's own onRequest (authentication), so refused requests are logged and traced too.
    instance.addHook('onRequest', function startProxyTelemetry (request, _reply, done) {
      beginProxyRequest(request)
      done()
    })
    instance.addHook('onResponse', function finishProxyTelemetry (request, reply, done) {
      finishProxyRequest(request, reply)
      done()
    })
    const { auth } = runtime.settings
    const authenticate = auth === null ? undefined : unlessIntercepted(await registerProxyAuthentication(instance, auth.realm, auth.check, auth.failureLimit))

    instance.route({
      method: instance.supportedMethods as HTTPMethods[],
      url: '*',
      exposeHeadRoute: false,
      constraints: { [PROXY_CONSTRAINT]: PROXY_CONSTRAINT_VALUE },
      onRequest: authenticate === undefined ? [refuseOversizedHead] : [refuseOversizedHead, authenticate],
      preParsing: hideContentTypeFromFastify,
      // Returning the reply tells Fastify the response is under way (it may still be streaming).
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        await handleProxyRequest(request, reply, runtime)
        return reply
      }
    })
  }
}

/**
 * Requests inside an intercepted tunnel were authorized when the tunnel opened
 * and carry no credentials of their own: authentication is skipped for them.
 */
function unlessIntercepted (authenticate: onRequestHookHandler): onRequestHookHandler {
  return function authenticateProxyRequest (this: FastifyInstance, request, reply, done) {
    if (proxyRequestTargetOf(request.raw)?.kind === 'intercepted') {
      done()
      return
    }
    return authenticate.call(this, request, reply, done)
  }
}

async function handleProxyRequest (request: FastifyRequest, reply: FastifyReply, runtime: ProxyRuntime): Promise<void> {
  restoreContentType(request.raw)
  const target = proxyRequestTargetOf(request.raw)
  if (target === null) throw new Error('proxy route reached by a request that is not a proxy request')
  if (target.kind === 'connect') {
    await openConnectTunnel(request, reply, target.destination, runtime)
    return
  }
  if (target.kind === 'intercepted') {
    await forwardInterceptedRequest(request, reply, target, runtime)
    return
  }
  await forwardAbsoluteRequest(request, reply, target.target, runtime)
}

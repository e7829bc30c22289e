// The Fastify `frameworkErrors` handler for proxy listeners: a request the router cannot take
// gets the proxy's own answer, and a proxy request among them its access line, count and span.

import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { ProxyError } from './protocol/errors'
import { DEFAULT_PSEUDONYM, sendProxyError } from './protocol/error-responses'
import { proxyRequestTargetOf } from './core/proxy-request'
import { proxyRuntimeOf } from './core/runtime'
import { beginProxyRequest, finishProxyRequest, noteProxyError } from './telemetry/request-telemetry'

/** The shape of Fastify's `frameworkErrors` server option. */
export type ProxyFrameworkErrorHandler = (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => void

/**
 * A Fastify `frameworkErrors` handler for proxy listeners. A request target Fastify's router
 * cannot decode (`GET http://127.0.0.1%zz/`, a path with a bad percent-escape) gets the proxy's
 * own 400 with `Proxy-Status: <pseudonym>; error=http_request_error` and a fixed one-line body,
 * instead of Fastify's JSON answer, which echoes the whole target, userinfo included. Any other
 * framework error gets 500 `proxy_internal_error`. A proxy request (absolute-form, or inside an
 * intercepted tunnel) answered here never reaches the proxy's route, so it is finished here as
 * the route would: its access line (`deny`, rule `request`), its count and its span. Pass it as
 * `Fastify({ frameworkErrors: proxyFrameworkErrors })`.
 */
export const proxyFrameworkErrors: ProxyFrameworkErrorHandler = createProxyFrameworkErrors(DEFAULT_PSEUDONYM)

/** Same as {@link proxyFrameworkErrors}, for a proxy registered with another `via` pseudonym. */
export function createProxyFrameworkErrors (pseudonym: string): ProxyFrameworkErrorHandler {
  return (error, request, reply) => {
    const answer = error.code === 'FST_ERR_BAD_URL'
      ? new ProxyError('http_request_error', 'The request target is not a valid URL.', { details: 'bad request target' })
      : new ProxyError('proxy_internal_error', 'The proxy could not route the request.')
    const proxied = proxyRequestTargetOf(request.raw) !== null
    if (proxied) {
      beginProxyRequest(request, proxyRuntimeOf(request.server.forwardProxy)?.capture ?? null)
      noteProxyError(request, answer)
    }
    reply.header('connection', 'close')
    sendProxyError(reply, pseudonym, answer)
    if (proxied) finishProxyRequest(request, reply)
  }
}

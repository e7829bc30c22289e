import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { DEFAULT_PSEUDONYM } from '../options'
import { ProxyError } from './proxy-error'
import { sendProxyError } from './proxy-response'

/** The shape of Fastify's `frameworkErrors` server option. */
export type ProxyFrameworkErrorHandler = (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => void

/**
 * A Fastify `frameworkErrors` handler for proxy listeners. A request target Fastify's router
 * cannot decode (`GET http://127.0.0.1%zz/`, a path with a bad percent-escape) gets the proxy's
 * own 400 with `Proxy-Status: <pseudonym>; error=http_request_error` and a fixed one-line body,
 * instead of Fastify's JSON answer, which echoes the whole target, userinfo included. Any other
 * framework error gets 500 `proxy_internal_error`. Pass it as
 * `Fastify({ frameworkErrors: proxyFrameworkErrors })`.
 */
export const proxyFrameworkErrors: ProxyFrameworkErrorHandler = createProxyFrameworkErrors(DEFAULT_PSEUDONYM)

/** Same as {@link proxyFrameworkErrors}, for a proxy registered with another `via` pseudonym. */
export function createProxyFrameworkErrors (pseudonym: string): ProxyFrameworkErrorHandler {
  return (error, _request, reply) => {
    const answer = error.code === 'FST_ERR_BAD_URL'
      ? new ProxyError('http_request_error', 'The request target is not a valid URL.', { details: 'bad request target' })
      : new ProxyError('proxy_internal_error', 'The proxy could not route the request.')
    reply.header('connection', 'close')
    sendProxyError(reply, pseudonym, answer)
  }
}

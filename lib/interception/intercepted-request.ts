import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ProxyRuntime } from '../proxy-runtime'
import { forwardRequest } from '../forward/forward-handler'
import { inTunnelProblemError, type InterceptedRequestTarget } from './in-tunnel-request'

/**
 * Handles a request inside an intercepted tunnel (SPEC 4.3): refused (400, or 421 when it
 * names another host) unless it is an origin-form request for the tunnel's own destination;
 * otherwise sent to `https://<host>:<port>` over HTTP/1.1 with validated TLS, Max-Forwards
 * untouched. It was authorized when the tunnel opened and is not authorized again.
 */
export async function forwardInterceptedRequest (
  request: FastifyRequest,
  reply: FastifyReply,
  target: InterceptedRequestTarget,
  runtime: ProxyRuntime
): Promise<void> {
  if (target.problem !== null) throw inTunnelProblemError(target.problem)
  await forwardRequest(request, reply, runtime, {
    destination: target.destination,
    scheme: 'https',
    pathAndQuery: target.pathAndQuery,
    applyMaxForwards: false
  })
}

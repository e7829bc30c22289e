import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ProxyRuntime } from '../proxy-runtime'
import { forwardRequest } from '../forward/forward-handler'
import { receivedHeaderObject } from '../forward/received-headers'
import { forwardWebSocketUpgrade, isWebSocketUpgrade, upgradeRequestHasBody } from '../forward/websocket-upgrade'
import { ProxyError } from '../diagnostics/proxy-error'
import { inTunnelProblemError, type InterceptedRequestTarget } from './in-tunnel-request'
import { inTunnelUpgradeOf } from './in-tunnel-upgrade'

/**
 * Handles a request inside an intercepted tunnel: refused (400, or 421 when it
 * names another host) unless it is an origin-form request for the tunnel's own destination;
 * otherwise sent to `https://<host>:<port>` over HTTP/1.1 with validated TLS, Max-Forwards
 * untouched. It was authorized when the tunnel opened and is not authorized again.
 *
 * An HTTP/1.1 WebSocket upgrade is relayed. Another upgrade (h2c, say) is forwarded
 * as an ordinary request with `Upgrade` removed; Node hands an upgrade request's body over
 * unparsed, so an upgrade request announcing a body gets 400.
 */
export async function forwardInterceptedRequest (
  request: FastifyRequest,
  reply: FastifyReply,
  target: InterceptedRequestTarget,
  runtime: ProxyRuntime
): Promise<void> {
  if (target.problem !== null) throw inTunnelProblemError(target.problem)
  const upgrade = inTunnelUpgradeOf(request.raw)
  if (upgrade !== undefined) {
    const raw = request.raw
    const received = receivedHeaderObject(raw.rawHeaders, raw.httpVersionMajor)
    if (isWebSocketUpgrade(request.method, raw.httpVersion, received)) {
      await forwardWebSocketUpgrade(request, reply, runtime, target, upgrade)
      return
    }
    if (upgradeRequestHasBody(received)) {
      throw new ProxyError('http_request_error', 'Upgrade requests with a body are not supported inside an intercepted tunnel.', { details: 'upgrade request with a body' })
    }
  }
  await forwardRequest(request, reply, runtime, {
    destination: target.destination,
    scheme: 'https',
    pathAndQuery: target.pathAndQuery,
    applyMaxForwards: false
  })
}

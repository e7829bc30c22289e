// Whether an admitted CONNECT's tunnel is intercepted: the destination filters, a host some
// secret is granted to, then the selector.

import type { FastifyRequest, preHandlerHookHandler } from 'fastify'
import type { ForwardProxyDestination } from '../../types/destination'
import type { ProxyRuntime, InterceptionRuntime } from '../core/runtime'
import { ProxyError } from '../protocol/errors'
import { policyRefusal, refusedBy } from '../protocol/refusals'
import type { Cancellation } from '../security/destination-connector'
import type { SecretSet } from '../security/secrets'
import { tunnelAdmissionOf } from '../connect/admission'
import { notePassthrough } from '../telemetry/request-telemetry'

/**
 * Decides whether an admitted CONNECT's tunnel is intercepted, in the proxy route's onRequest
 * hook right after admission, and puts the answer in `request.tunnelMode` for the
 * application's later hooks and the handler. The destination filters run first (a refusal is
 * 403 `http_request_denied`), then the selector; a host some secret is granted to is
 * intercepted without asking the selector, since its placeholders can only be replaced inside
 * the TLS. The filters and the selector get an AbortSignal that aborts when the client goes
 * away. Without tlsInterception every admitted CONNECT is `'opaque'`; these and a CONNECT that
 * was not admitted pass at once, without a promise.
 * Errors (whatever a filter, the selector or its factory throws) go to `done`: 500
 * `proxy_internal_error`, or a filter's 403.
 */
export function decideTunnelInterception (runtime: ProxyRuntime): preHandlerHookHandler {
  return function decideInterception (request, _reply, done) {
    const admission = tunnelAdmissionOf(request.raw)
    const { interception } = runtime
    if (admission === undefined || admission.client.gone) {
      done()
      return
    }
    if (interception === undefined) {
      request.tunnelMode = 'opaque'
      done()
      return
    }
    const { destination, clientGone } = admission
    let verdict: boolean | Promise<boolean>
    try {
      verdict = shouldInterceptTunnel(request, destination, interception, runtime.settings.secrets, clientGone)
    } catch (error) {
      done(error as Error)
      return
    }
    if (typeof verdict === 'boolean') {
      request.tunnelMode = verdict ? 'intercept' : 'opaque'
      done()
      return
    }
    verdict.then((intercept) => {
      request.tunnelMode = intercept ? 'intercept' : 'opaque'
      done()
    }, (error: unknown) => { done(error as Error) })
  }
}

/**
 * Runs the destination filters, then the selector (unless a secret is granted to the host:
 * then the tunnel is intercepted without asking). True to intercept; without filters and with
 * a selector that answers at once (the built-in host list), the answer comes without a promise.
 * @throws ProxyError 403 `http_request_denied` when a filter refuses the tunnel.
 */
function shouldInterceptTunnel (
  request: FastifyRequest,
  destination: ForwardProxyDestination,
  interception: InterceptionRuntime,
  secrets: SecretSet | null,
  clientGone: Cancellation
): boolean | Promise<boolean> {
  const filters = interception.settings.destinationFilters
  if (filters.length === 0) return selectInterception(request, destination, interception, secrets, clientGone)
  return filteredThenSelected(request, destination, interception, secrets, clientGone)
}

async function filteredThenSelected (
  request: FastifyRequest,
  destination: ForwardProxyDestination,
  interception: InterceptionRuntime,
  secrets: SecretSet | null,
  clientGone: Cancellation
): Promise<boolean> {
  for (const filter of interception.settings.destinationFilters) {
    if (await filter.allowTunnel(request, destination, clientGone.signal) !== true) {
      throw policyRefusal('filter', refusedBy('destinationFilters', new ProxyError('http_request_denied', 'The proxy refuses tunnels to this destination.', { details: 'refused by a destination filter' })))
    }
  }
  return await selectInterception(request, destination, interception, secrets, clientGone)
}

/** After the filters: a host some secret is granted to, a client that refused the proxy's certificate, then the selector. */
function selectInterception (
  request: FastifyRequest,
  destination: ForwardProxyDestination,
  interception: InterceptionRuntime,
  secrets: SecretSet | null,
  clientGone: Cancellation
): boolean | Promise<boolean> {
  if (secrets?.grantsDestination(destination.host, destination.port) === true) return true
  const refusals = interception.clientRefusals
  if (refusals !== null && interception.keepsInterception(destination) === null) {
    const client = { user: request.proxyUser?.name ?? null, address: request.raw.socket?.remoteAddress }
    if (refusals.passingThrough(client, destination)) {
      notePassthrough(request)
      return false
    }
  }
  const { selector: selectorSource } = interception
  if (selectorSource === null) return false
  const selector = typeof selectorSource === 'function' ? selectorSource(request) : selectorSource
  const verdict = selector.shouldIntercept(request, destination, clientGone.signal)
  return typeof verdict === 'boolean' ? verdict : Promise.resolve(verdict).then((intercept) => intercept === true)
}

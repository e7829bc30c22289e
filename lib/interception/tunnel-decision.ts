// Whether an admitted CONNECT's tunnel is intercepted: the destination filters, a host some
// secret is granted to, then the selector.

import type { FastifyRequest, preHandlerHookHandler } from 'fastify'
import type { ProxyRuntime, InterceptionRuntime } from '../core/runtime'
import { ProxyError, asError } from '../protocol/errors'
import { policyRefusal, refusedBy } from '../protocol/refusals'
import type { SecretSet } from '../security/secrets'
import { tunnelAdmissionOf, type TunnelAdmission } from '../connect/admission'
import { notePassthrough } from '../telemetry/request-telemetry'
import { ignoresSignal } from './host-list-selector'

// Given to the built-in selectors, which never read it.
const UNREAD_SIGNAL = new AbortController().signal

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
    const { secrets } = runtime.settings
    let verdict: boolean | Promise<boolean>
    try {
      // Without filters, a selector that answers at once (the built-in host list) answers without a promise.
      verdict = interception.settings.destinationFilters.length === 0
        ? selectInterception(request, admission, interception, secrets)
        : filteredThenSelected(request, admission, interception, secrets)
    } catch (error) {
      // Fastify takes done(undefined) or done(null) for success: a filter or selector that threw
      // no Error must not open the tunnel.
      done(asError(error))
      return
    }
    const decided = (intercept: boolean): void => {
      request.tunnelMode = intercept ? 'intercept' : 'opaque'
      done()
    }
    if (typeof verdict === 'boolean') decided(verdict)
    else verdict.then(decided, (error: unknown) => { done(asError(error)) })
  }
}

/**
 * Runs the destination filters, then {@link selectInterception}. True to intercept.
 * @throws ProxyError 403 `http_request_denied` when a filter refuses the tunnel.
 */
async function filteredThenSelected (
  request: FastifyRequest,
  admission: TunnelAdmission,
  interception: InterceptionRuntime,
  secrets: SecretSet | null
): Promise<boolean> {
  const { destination, clientGone } = admission
  for (const filter of interception.settings.destinationFilters) {
    if (await filter.allowTunnel(request, destination, clientGone.signal) !== true) {
      throw policyRefusal('filter', refusedBy('destinationFilters', new ProxyError('http_request_denied', 'The proxy refuses tunnels to this destination.', { details: 'refused by a destination filter' })))
    }
  }
  return await selectInterception(request, admission, interception, secrets)
}

/**
 * After the filters: a host some secret is granted to is intercepted without asking, a client
 * that refused the proxy's certificate is passed through, then the selector decides. True to
 * intercept; a promise only when the selector answers with one.
 */
function selectInterception (
  request: FastifyRequest,
  admission: TunnelAdmission,
  interception: InterceptionRuntime,
  secrets: SecretSet | null
): boolean | Promise<boolean> {
  const { destination, clientGone } = admission
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
  const verdict = selector.shouldIntercept(request, destination, ignoresSignal(selector) ? UNREAD_SIGNAL : clientGone.signal)
  return typeof verdict === 'boolean' ? verdict : Promise.resolve(verdict).then((intercept) => intercept === true)
}

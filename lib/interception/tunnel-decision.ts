import type { FastifyRequest } from 'fastify'
import type { ForwardProxyDestination } from '../../types/destination'
import type { ForwardProxyCertificateProvider } from '../../types/interception'
import { ProxyError } from '../diagnostics/proxy-error'
import { policyRefusal } from '../diagnostics/policy-refusal'
import type { InterceptionRuntime } from './interception-runtime'

/**
 * Runs the destination filters, then the selector, once per CONNECT,
 * after authentication, policy and the tunnel limit. Returns the certificate provider for the
 * tunnel when it is to be intercepted, null when it is relayed opaquely (no selector, or the
 * selector said no). `signal` aborts when the client goes away.
 * @throws ProxyError 403 `http_request_denied` when a filter refuses the tunnel; whatever a
 * filter, selector or factory throws (answered 500 `proxy_internal_error`).
 */
export async function decideInterception (
  request: FastifyRequest,
  destination: ForwardProxyDestination,
  interception: InterceptionRuntime,
  signal: AbortSignal
): Promise<ForwardProxyCertificateProvider | null> {
  for (const filter of interception.settings.destinationFilters) {
    if (await filter.allowTunnel(request, destination, signal) !== true) {
      throw policyRefusal('filter', new ProxyError('http_request_denied', 'The proxy refuses tunnels to this destination.', { details: 'refused by a destination filter' }))
    }
  }
  const { selector: selectorSource, certificateProvider: providerSource } = interception
  if (selectorSource === null) return null
  const selector = typeof selectorSource === 'function' ? selectorSource(request) : selectorSource
  if (await selector.shouldIntercept(request, destination, signal) !== true) return null
  if (providerSource === null) throw new Error('tlsInterception has no certificate provider')
  return typeof providerSource === 'function' ? providerSource(request) : providerSource
}

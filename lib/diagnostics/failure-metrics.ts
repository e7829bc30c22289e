import type { Attributes } from '@opentelemetry/api'
import { isProxyError, type ProxyError, type ProxyErrorType } from './proxy-error'
import { policyRefusalReasonOf, type PolicyRefusalReason } from './policy-refusal'
import { proxyInstruments } from './proxy-instruments'

/** The attribute naming why the policy refused, on `forward_proxy.policy.refusals`. */
export const REFUSAL_REASON_ATTRIBUTE = 'forward_proxy.policy.reason'

/** The attribute naming why authentication failed, on `forward_proxy.auth.failures`. */
export const AUTH_FAILURE_REASON_ATTRIBUTE = 'forward_proxy.auth.reason'

/**
 * Error types that mean the proxy could not connect to the destination (DNS, TCP or TLS).
 * `connection_terminated` is left out: it also stands for a client that left while connecting.
 */
const CONNECT_FAILURES: ReadonlySet<ProxyErrorType> = new Set<ProxyErrorType>([
  'dns_error', 'dns_timeout', 'destination_unavailable',
  'connection_refused', 'connection_timeout', 'tls_protocol_error', 'tls_certificate_error'
])

const attributeCache = new Map<string, Attributes>()

/** Frozen attributes for one key/value, made once: the values come from small closed sets. */
function attributesOf (key: string, value: string): Attributes {
  const id = `${key}=${value}`
  let attributes = attributeCache.get(id)
  if (attributes === undefined) {
    attributes = Object.freeze({ [key]: value })
    attributeCache.set(id, attributes)
  }
  return attributes
}

/**
 * Counts a failure the proxy answered: an authentication failure (407, or 429 from the
 * brute-force guard), a policy refusal by
 * reason, or a failed connection to the destination by `Proxy-Status` error type. `original`
 * is what was thrown, before it became `error` (an authentication failure from
 * @fastify/basic-auth is not a ProxyError).
 */
export function recordProxyFailure (error: ProxyError, original: unknown): void {
  const instruments = proxyInstruments()
  if (error.status === 407) {
    instruments.authFailures.add(1, attributesOf(AUTH_FAILURE_REASON_ATTRIBUTE, isProxyError(original) ? 'invalid_credentials' : 'missing_or_malformed'))
    return
  }
  // The brute-force guard's answer (auth.failureLimit): the only 429 the proxy makes.
  if (error.status === 429) {
    instruments.authFailures.add(1, attributesOf(AUTH_FAILURE_REASON_ATTRIBUTE, 'rate_limited'))
    return
  }
  const reason: PolicyRefusalReason | undefined = policyRefusalReasonOf(error)
  if (reason !== undefined) {
    instruments.policyRefusals.add(1, attributesOf(REFUSAL_REASON_ATTRIBUTE, reason))
    return
  }
  if (CONNECT_FAILURES.has(error.errorType)) instruments.connectFailures.add(1, attributesOf('error.type', error.errorType))
}

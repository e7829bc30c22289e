import type { ProxyError } from './proxy-error'

/**
 * Why the destination policy refused a request or tunnel: its host is denied or not allowed,
 * its port is not allowed, its address is in a refused range, or a destination filter said no.
 */
export type PolicyRefusalReason = 'host' | 'port' | 'address' | 'filter'

const reasons = new WeakMap<ProxyError, PolicyRefusalReason>()

/** Marks `error` as a policy refusal for `reason` (read by the metrics) and returns it. */
export function policyRefusal (reason: PolicyRefusalReason, error: ProxyError): ProxyError {
  reasons.set(error, reason)
  return error
}

/**
 * The refusal reason of `error`, or undefined when it is not a policy refusal. A
 * `destination_ip_prohibited` error is one even when it crossed undici unmarked.
 */
export function policyRefusalReasonOf (error: ProxyError): PolicyRefusalReason | undefined {
  return reasons.get(error) ?? (error.errorType === 'destination_ip_prohibited' ? 'address' : undefined)
}

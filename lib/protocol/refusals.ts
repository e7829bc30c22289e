// Which rule refused a request: the marks a refusal carries for the access log and the metrics
// (a policy reason, the rule's name), and what an unmarked error is taken for.

import type { ProxyError } from './errors'

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

const refusalRules = new WeakMap<ProxyError, string>()

/**
 * Marks `error` as a refusal decided by `rule` and returns it: the access log line of the
 * request names the rule (`access.rule`) with `access.decision` `deny`. Rules name where the
 * policy is written: an option path (`destinations.deniedHosts`, `limits.maxConcurrentTunnels`),
 * a user's or a secret's own field (`users.<name>.allowedHosts`, `secrets.<name>.hosts`), or one
 * of the built-in words `auth`, `loop`, `request`, `transforms`.
 */
export function refusedBy (rule: string, error: ProxyError): ProxyError {
  refusalRules.set(error, rule)
  return error
}

/** True when `error` was marked by {@link refusedBy}. */
export function isMarkedRefusal (error: ProxyError): boolean {
  return refusalRules.has(error)
}

/**
 * The rule that refused a request answered with `error`, or undefined when `error` is a failure
 * rather than a refusal (a destination that could not be reached, a timeout, an internal error,
 * a client that stopped sending). Errors not marked by {@link refusedBy} are judged by type:
 * authentication (`auth`), an address in a refused range (`destinations.allowPrivateNetworks`,
 * also when it crossed undici unmarked), a loop (`loop`), and any other 4xx but 408, which the
 * request itself earned (`request`: malformed, unsupported, too large, or a host other than the
 * tunnel's). Authentication is told by its status, 407.
 */
export function refusalRuleOf (error: ProxyError): string | undefined {
  const rule = refusalRules.get(error)
  if (rule !== undefined) return rule
  if (error.status === 407) return 'auth'
  switch (error.errorType) {
    case 'destination_ip_prohibited': return 'destinations.allowPrivateNetworks'
    case 'proxy_loop_detected': return 'loop'
    // A request the proxy will not serve: malformed, too large, or one it does not implement (501).
    default: return (error.status >= 400 && error.status < 500 && error.status !== 408) || (error.status === 501 && error.errorType === 'http_request_error') ? 'request' : undefined
  }
}

/** The `details` of the authentication guard's 429 (`auth.failureLimit`), which the metrics count apart. */
export const AUTH_LOCKOUT_DETAILS = 'too many failed authentication attempts'

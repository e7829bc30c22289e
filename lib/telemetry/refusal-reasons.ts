// Why the proxy answered a request with an error of its own, as the `forward_proxy.reason`
// attribute of the refused and failed outcomes: a closed set, its attributes built once.

import type { Attributes } from '@opentelemetry/api'
import { type ProxyError } from '../protocol/errors'
import { refusalRuleOf } from '../protocol/refusals'
import { PROXY_KIND_ATTRIBUTE, PROXY_OUTCOME_ATTRIBUTE, proxyInstruments, type ProxyRequestKind } from './metrics'

/** The attribute naming why the proxy answered with an error, on the `refused` and `failed` outcomes. */
const PROXY_REASON_ATTRIBUTE = 'forward_proxy.reason'

/**
 * Why the proxy answered a request with an error of its own (`forward_proxy.reason`): which
 * rule refused it, or what failed. A closed set, so the counter never grows with traffic.
 */
type ProxyRefusalReason =
  | 'auth' | 'destination_policy' | 'user_hosts' | 'user_secrets' | 'user_rate_limit' | 'user_tunnel_limit'
  | 'secret_destination' | 'tunnel_limit' | 'request_limit' | 'loop' | 'transform' | 'bad_request'
  | 'destination_error' | 'internal_error' | 'limit_store_unavailable' | 'other'

const REASONS: readonly ProxyRefusalReason[] = [
  'auth', 'destination_policy', 'user_hosts', 'user_secrets', 'user_rate_limit', 'user_tunnel_limit',
  'secret_destination', 'tunnel_limit', 'request_limit', 'loop', 'transform', 'bad_request',
  'destination_error', 'internal_error', 'limit_store_unavailable', 'other'
]

type ErrorOutcome = 'refused' | 'failed'
type ReasonAttributes = Readonly<Record<ErrorOutcome, Readonly<Record<ProxyRefusalReason, Attributes>>>>

// Built once, like OUTCOME_ATTRIBUTES: an error's count allocates nothing either.
const REASON_ATTRIBUTES: Readonly<Record<ProxyRequestKind, ReasonAttributes>> = Object.freeze({
  connect: reasonAttributes('connect'),
  forward: reasonAttributes('forward'),
  intercepted: reasonAttributes('intercepted')
})

function reasonAttributes (kind: ProxyRequestKind): ReasonAttributes {
  const byOutcome = (outcome: ErrorOutcome): Readonly<Record<ProxyRefusalReason, Attributes>> => {
    const table: Partial<Record<ProxyRefusalReason, Attributes>> = {}
    for (const reason of REASONS) {
      table[reason] = Object.freeze({ [PROXY_KIND_ATTRIBUTE]: kind, [PROXY_OUTCOME_ATTRIBUTE]: outcome, [PROXY_REASON_ATTRIBUTE]: reason })
    }
    return Object.freeze(table as Record<ProxyRefusalReason, Attributes>)
  }
  return Object.freeze({ refused: byOutcome('refused'), failed: byOutcome('failed') })
}

/**
 * Counts a proxy request the proxy answered with `error`: `forward_proxy.request.outcomes` +1
 * with its kind, `refused` (a 4xx) or `failed` (a 5xx) by `status`, and the reason
 * ({@link refusalReasonOf}). A `status` below 400 was the destination's, sent before the error
 * (a body that stalled or was cut after its head): the error's own status says which it was.
 */
export function countErrorOutcome (kind: ProxyRequestKind, status: number, error: ProxyError): void {
  const reason = refusalReasonOf(error)
  const judged = status >= 400 ? status : error.status
  // A 501 for what the proxy does not implement is a refusal of the request, not a failure.
  proxyInstruments().requestOutcomes.add(1, REASON_ATTRIBUTES[kind][judged >= 500 && reason !== 'bad_request' ? 'failed' : 'refused'][reason])
}

/**
 * The reason of an error the proxy answered with, from the rule that refused it
 * (`refusalRuleOf`): proxy authentication and its brute-force guard (`auth`), the destination
 * policy or a destination filter (`destination_policy`), a user's `allowedHosts`, `secrets`,
 * `requestsPerMinute` or `maxConcurrentTunnels`, a secret's placeholder where its secret may not
 * go (`secret_destination`), the proxy's limits, a loop, a transform, a malformed request
 * (`bad_request`), a store of shared limits that cannot be reached (`limit_store_unavailable`);
 * without a rule, a failure: `internal_error`, else `destination_error` (5xx) or `bad_request`.
 */
function refusalReasonOf (error: ProxyError): ProxyRefusalReason {
  const rule = refusalRuleOf(error)
  if (rule === undefined) return error.errorType === 'proxy_internal_error' ? 'internal_error' : error.status >= 500 ? 'destination_error' : 'bad_request'
  switch (rule) {
    case 'auth': case 'auth.failureLimit': return 'auth'
    case 'destinationFilters': return 'destination_policy'
    case 'limits.maxConcurrentTunnels': return 'tunnel_limit'
    case 'limits.maxConcurrentRequests': return 'request_limit'
    case 'loop': return 'loop'
    case 'transforms': return 'transform'
    case 'request': return 'bad_request'
    case 'headers[].tlsOnly': return 'secret_destination'
    case 'redis.onError': return 'limit_store_unavailable'
  }
  if (rule.startsWith('destinations.')) return 'destination_policy'
  if (rule.startsWith('secrets.')) return 'secret_destination'
  // `users.<name>.<field>`: the field is the last segment whatever the name holds.
  if (rule.startsWith('users.')) {
    if (rule.endsWith('.allowedHosts')) return 'user_hosts'
    if (rule.endsWith('.secrets')) return 'user_secrets'
    if (rule.endsWith('.requestsPerMinute')) return 'user_rate_limit'
    if (rule.endsWith('.maxConcurrentTunnels')) return 'user_tunnel_limit'
  }
  return 'other'
}

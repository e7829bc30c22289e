// Report mode: a host list that logs what it would refuse instead of refusing it, so a new list
// can be rolled out against real traffic first.

import type { ForwardProxyPolicyMode } from '../../types/options'

/**
 * A refusal that report mode let through: the rule that would have refused (`destinations.allowedHosts`,
 * `users.<name>.allowedHosts`, ...) and the `details` it would have answered with. The request
 * goes on and its access log line says `would-deny` with these.
 */
export interface ReportedRefusal {
  readonly rule: string
  readonly reason: string
}

const MODES: readonly ForwardProxyPolicyMode[] = ['enforce', 'report']

/** True when `mode` (a `mode` field as given) is a valid one: absent, `enforce` or `report`. */
export function isPolicyMode (mode: unknown): mode is ForwardProxyPolicyMode | undefined {
  return mode === undefined || MODES.includes(mode as ForwardProxyPolicyMode)
}

/** What an option error says about a `mode` that is neither `enforce` nor `report`. */
export const POLICY_MODE_PROBLEM = 'must be "enforce" (the default: refuse) or "report" (forward, and log what would be refused)'

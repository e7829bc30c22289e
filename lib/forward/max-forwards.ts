/** What Max-Forwards asks of the proxy for one request: forward it, or answer it at 0. */
export type MaxForwardsDecision =
  | { readonly action: 'forward', readonly value: string | undefined }
  | { readonly action: 'answer-options' }
  | { readonly action: 'refuse-trace' }

/**
 * Applies Max-Forwards to TRACE and OPTIONS: a valid value (1*DIGIT) is decremented; at 0 the
 * proxy answers itself (OPTIONS: empty 200; TRACE: 405, it never echoes a request). An invalid
 * value, or any other method, is forwarded unchanged. `value` is the header to send, if any.
 */
export function decideMaxForwards (method: string, header: string | undefined): MaxForwardsDecision {
  if ((method !== 'TRACE' && method !== 'OPTIONS') || header === undefined || !/^[0-9]+$/.test(header)) {
    return { action: 'forward', value: header }
  }
  const remaining = BigInt(header)
  if (remaining === 0n) return method === 'OPTIONS' ? { action: 'answer-options' } : { action: 'refuse-trace' }
  return { action: 'forward', value: (remaining - 1n).toString() }
}

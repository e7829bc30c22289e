import type { ForwardProxyInterceptionSelector } from '../../types/interception'
import { compileHostPattern, matchesAny, type HostPattern } from '../security/host-pattern'
import { RULE_ERROR_CODE } from '../error-codes'

/** Thrown by the built-ins when a host pattern or header rule is unusable; the message says which. */
export class ForwardProxyRuleError extends TypeError {
  /** Stable code of every invalid-rule error. */
  readonly code = RULE_ERROR_CODE

  constructor (message: string) {
    super(`fastify-forward-proxy: ${message}`)
    this.name = 'ForwardProxyRuleError'
  }
}

/**
 * Compiles host patterns given by an operator (`example.com`, `*.example.com`, `*`, IP
 * literals), naming the first unusable one.
 * @throws ForwardProxyRuleError for a pattern that can match nothing valid.
 */
export function compileHostPatterns (patterns: readonly string[], option: string): HostPattern[] {
  if (!Array.isArray(patterns)) throw new ForwardProxyRuleError(`${option} must be an array of host patterns`)
  return patterns.map((text, index) => {
    const pattern = typeof text === 'string' ? compileHostPattern(text) : null
    if (pattern === null) throw new ForwardProxyRuleError(`${option}[${index}] is not a host pattern (example.com, *.example.com, *, an IP literal or a CIDR range)`)
    return pattern
  })
}

/**
 * The built-in interception selector: intercepts the tunnels whose CONNECT host matches one of
 * `hosts` (the configuration file's `interception.hosts`). Ports do not matter; users do not
 * either (write your own selector to decide per `request.proxyUser`).
 * @throws ForwardProxyRuleError naming an unusable pattern.
 */
export function createHostListSelector (hosts: readonly string[]): ForwardProxyInterceptionSelector {
  const patterns = compileHostPatterns(hosts, 'interception hosts')
  return {
    shouldIntercept: (_request, destination) => matchesAny(patterns, destination.host)
  }
}

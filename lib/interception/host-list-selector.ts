// The built-in interception selector: intercept the tunnels whose host matches a list of patterns.

import type { ForwardProxyInterceptionSelector } from '../../types/interception'
import { matchesAny, compileHostPatterns } from '../protocol/hosts'

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

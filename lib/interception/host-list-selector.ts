// The built-in interception selector: intercept the tunnels whose host matches a list of patterns.

import type { ForwardProxyInterceptionSelector } from '../../types/interception'
import { matchesAny, compileHostPatterns } from '../protocol/hosts'

/** The selectors made here: they decide from the destination's host alone and never read the signal. */
const decidingFromHostAlone = new WeakSet<ForwardProxyInterceptionSelector>()

/**
 * The built-in interception selector: intercepts the tunnels whose CONNECT host matches one of
 * `hosts` (the configuration file's `interception.hosts`). Ports do not matter; users do not
 * either (write your own selector to decide per `request.proxyUser`).
 * @throws ForwardProxyRuleError naming an unusable pattern.
 */
export function createHostListSelector (hosts: readonly string[]): ForwardProxyInterceptionSelector {
  return createReplaceableHostListSelector(hosts).selector
}

/** A host-list selector whose list can be replaced (the bin's reload), and how to replace it. */
export interface ReplaceableHostListSelector {
  readonly selector: ForwardProxyInterceptionSelector
  /**
   * Replaces the list; the tunnels opened from then on are decided by it.
   * @throws ForwardProxyRuleError naming an unusable pattern (the list in force stays).
   */
  readonly setHosts: (hosts: readonly string[]) => void
}

/** {@link createHostListSelector}, with a list that {@link ReplaceableHostListSelector.setHosts} replaces. */
export function createReplaceableHostListSelector (hosts: readonly string[]): ReplaceableHostListSelector {
  let patterns = compileHostPatterns(hosts, 'interception hosts')
  const selector: ForwardProxyInterceptionSelector = {
    shouldIntercept: (_request, destination) => matchesAny(patterns, destination.host)
  }
  decidingFromHostAlone.add(selector)
  return {
    selector,
    setHosts: (next) => { patterns = compileHostPatterns(next, 'interception hosts') }
  }
}

/**
 * True when `selector` is one of the built-in host-list selectors, which never read the signal
 * they are given: the proxy does not make an AbortSignal for them (making and collecting one
 * was about 3% of the CPU of a CONNECT through the bin with interception configured).
 */
export function ignoresSignal (selector: ForwardProxyInterceptionSelector): boolean {
  return decidingFromHostAlone.has(selector)
}

import { canonicalConfiguredHost } from './canonical-host'

/** A compiled host pattern: `*`, `*.example.com`, `example.com` or an IP literal. */
export interface HostPattern {
  readonly text: string
  matches (host: string): boolean
}

/**
 * Compiles a host pattern from configuration. `*.example.com` matches every name under
 * example.com (any depth) but not example.com itself. Names are canonicalized (lower case,
 * punycode, no trailing dot) so the pattern and the target are compared in the same form.
 * Returns null for a pattern that cannot match anything valid.
 */
export function compileHostPattern (text: string): HostPattern | null {
  if (text === '*') return { text, matches: () => true }
  if (text.startsWith('*.')) {
    const suffix = canonicalConfiguredHost(text.slice(2))
    if (suffix === null) return null
    const dottedSuffix = `.${suffix}`
    return { text, matches: (host) => host.endsWith(dottedSuffix) && host.length > dottedSuffix.length }
  }
  const exact = canonicalConfiguredHost(text)
  if (exact === null) return null
  return { text, matches: (host) => host === exact }
}

/** True when any pattern matches `host` (already canonical). */
export function matchesAny (patterns: readonly HostPattern[], host: string): boolean {
  return patterns.some((pattern) => pattern.matches(host))
}

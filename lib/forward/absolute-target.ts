import type { ForwardProxyDestination } from '../../types/destination'
import { canonicalHost } from '../security/canonical-host'

/** An absolute-form `http://` request target, split for forwarding. */
export interface AbsoluteTarget {
  readonly destination: ForwardProxyDestination
  /** Path and query exactly as received (never normalized); `/` when the target had none. */
  readonly pathAndQuery: string
}

/** Why an absolute-form target cannot be forwarded. */
export type AbsoluteTargetProblem = 'https-scheme' | 'unsupported-scheme' | 'malformed'

const ABSOLUTE_FORM = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^#]*)$/

/** True when a request target is in absolute form (`scheme://...`). */
export function isAbsoluteForm (target: string): boolean {
  return /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(target)
}

/**
 * Parses an absolute-form target. Only `http` is forwarded; `https` must use CONNECT
 * instead. Userinfo, fragments, bad ports and hosts that do not canonicalize are refused.
 */
export function parseAbsoluteTarget (target: string): AbsoluteTarget | AbsoluteTargetProblem {
  const match = ABSOLUTE_FORM.exec(target)
  if (match === null) return 'malformed'
  const [, scheme = '', authority = '', rest = ''] = match
  const lowerScheme = scheme.toLowerCase()
  if (lowerScheme === 'https') return 'https-scheme'
  if (lowerScheme !== 'http') return 'unsupported-scheme'
  const authorityMatch = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~-]+)(?::([0-9]{0,5}))?$/.exec(authority)
  if (authorityMatch === null) return 'malformed'
  const [, rawHost = '', rawPort] = authorityMatch
  const port = rawPort === undefined || rawPort === '' ? 80 : Number(rawPort)
  if (port < 1 || port > 65535) return 'malformed'
  const host = canonicalHost(rawHost)
  if (host === null) return 'malformed'
  const pathAndQuery = rest === '' ? '/' : rest.startsWith('?') ? `/${rest}` : rest
  return { destination: { host, port }, pathAndQuery }
}

import type { ForwardProxyDestination } from '../../types/destination'
import { isEquivalentAuthority } from '../forward/equivalent-authority'
import { ProxyError } from '../diagnostics/proxy-error'

/** Why a request inside an intercepted tunnel cannot be forwarded: only origin-form requests for the CONNECT target are. */
export type InTunnelProblem = 'not-origin-form' | 'connect' | 'extended-connect' | 'missing-host' | 'misdirected'

/** A request inside an intercepted tunnel. */
export interface InterceptedRequestTarget {
  readonly kind: 'intercepted'
  /** The CONNECT target of the tunnel; every request inside goes there or nowhere. */
  readonly destination: ForwardProxyDestination
  /** The path and query as received (origin-form). */
  readonly pathAndQuery: string
  /** Null when the request may be forwarded. */
  readonly problem: InTunnelProblem | null
}

/** The raw-request fields read here (an HTTP/1.1 request or an HTTP/2 compatibility request). */
interface RawInTunnelRequest {
  readonly method?: string
  readonly url?: string
  readonly headers: Record<string, string | string[] | undefined>
}

/**
 * Classifies a request that came through an intercepted tunnel: only origin-form is accepted
 * (absolute-form, asterisk-form and a CONNECT inside are refused), extended CONNECT
 * (`:protocol`, WebSockets over HTTP/2) is refused, and `Host` and `:authority` must name the
 * CONNECT target once case, a trailing dot and the default port 443 are normalized: anything
 * else is misdirected, never sent elsewhere.
 */
export function classifyInTunnelRequest (req: RawInTunnelRequest, destination: ForwardProxyDestination): InterceptedRequestTarget {
  const url = req.url ?? ''
  const target = (problem: InTunnelProblem | null): InterceptedRequestTarget => ({ kind: 'intercepted', destination, pathAndQuery: url, problem })
  if (req.method === 'CONNECT') return target(req.headers[':protocol'] === undefined ? 'connect' : 'extended-connect')
  if (!url.startsWith('/')) return target('not-origin-form')
  const authorities = [req.headers[':authority'], req.headers.host]
    .flatMap((value) => value === undefined ? [] : Array.isArray(value) ? value : [value])
  if (authorities.length === 0) return target('missing-host')
  if (!authorities.every((authority) => isEquivalentAuthority(authority, destination, 443))) return target('misdirected')
  return target(null)
}

const PROBLEMS: Record<InTunnelProblem, () => ProxyError> = {
  'not-origin-form': () => new ProxyError('http_request_error', 'Requests inside an intercepted tunnel must use origin-form targets.', { details: 'not origin-form' }),
  connect: () => new ProxyError('http_request_error', 'CONNECT is not allowed inside an intercepted tunnel.', { details: 'CONNECT inside an intercepted tunnel' }),
  'extended-connect': () => new ProxyError('http_request_error', 'WebSockets over HTTP/2 are not supported inside an intercepted tunnel.', { details: 'extended CONNECT inside an intercepted tunnel' }),
  'missing-host': () => new ProxyError('http_request_error', 'The request names no host.', { details: 'no Host or :authority' }),
  misdirected: () => new ProxyError('http_request_error', 'The request names another host than the tunnel was opened to.', { status: 421, details: 'Host does not match the CONNECT target' })
}

/** The error a request with `problem` is answered with (400, or 421 for a misdirected request). */
export function inTunnelProblemError (problem: InTunnelProblem): ProxyError {
  return PROBLEMS[problem]()
}

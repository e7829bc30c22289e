// The error classes of the proxy's answers and of invalid options and rules, with their codes:
// Proxy-Status error types and their statuses, `ProxyError`, `ForwardProxyOptionsError` and
// `ForwardProxyRuleError`.

/**
 * RFC 9209 error types this proxy reports in `Proxy-Status`, with the status each maps to.
 * One table, so a status and its error type never disagree; every type in it is one the proxy
 * raises (a test keeps it so).
 */
export const PROXY_ERROR_STATUS = {
  http_request_error: 400,
  http_request_denied: 403,
  destination_ip_prohibited: 403,
  proxy_loop_detected: 508,
  dns_error: 502,
  dns_timeout: 504,
  destination_unavailable: 503,
  connection_refused: 502,
  connection_terminated: 502,
  connection_timeout: 504,
  connection_read_timeout: 504,
  connection_limit_reached: 503,
  http_response_timeout: 504,
  http_response_header_section_size: 502,
  http_response_content_coding: 502,
  http_response_transfer_coding: 502,
  http_protocol_error: 502,
  tls_protocol_error: 502,
  tls_certificate_error: 502,
  proxy_internal_error: 500
} as const

/** An RFC 9209 error type (`Proxy-Status: ...; error=<type>`). */
export type ProxyErrorType = keyof typeof PROXY_ERROR_STATUS

/**
 * The stable `code` of a {@link ProxyError}: `FFP_ERR_` and its Proxy-Status error type in upper
 * case, e.g. `FFP_ERR_HTTP_REQUEST_DENIED`.
 */
export type ProxyErrorCode = `FFP_ERR_${Uppercase<ProxyErrorType>}`

/** The code of a {@link ProxyError} of `type`. */
function proxyErrorCode (type: ProxyErrorType): ProxyErrorCode {
  return `FFP_ERR_${type.toUpperCase()}` as ProxyErrorCode
}

/** Options of a {@link ProxyError} beyond its type. */
export interface ProxyErrorOptions {
  /** Overrides the status the type maps to (e.g. 405 for TRACE at Max-Forwards 0). */
  status?: number
  /** Safe, client-visible detail (no internals, no secrets); goes into `details="..."`. */
  details?: string
  /** The underlying error, for logs only. */
  cause?: unknown
  /** Seconds after which the client may try again: sent as `Retry-After`. */
  retryAfter?: number
  /** The upstream proxy the failure came from (`host:port`, no credentials): `next-hop`. */
  nextHop?: string
}

/** The `Retry-After` of a refusal that ends in `msLeft` ms: whole seconds, rounded up, at least 1. */
export function retryAfterSeconds (msLeft: number): number {
  return Math.max(1, Math.ceil(msLeft / 1000))
}

/**
 * A failure the proxy answers itself. Every response the proxy makes is built from one of
 * these by `sendProxyError`, which sets the status, `Proxy-Status` and a short text body.
 */
export class ProxyError extends Error {
  /** RFC 9209 error type. */
  readonly errorType: ProxyErrorType
  /** Stable code, `FFP_ERR_` and the error type in upper case. */
  readonly code: ProxyErrorCode
  /** HTTP status of the response. */
  readonly status: number
  /** Client-visible detail, if any. */
  readonly details: string | undefined
  /** Seconds after which the client may try again (`Retry-After`), if said. */
  readonly retryAfter: number | undefined
  /** The upstream proxy the failure came from, if any (`next-hop` in `Proxy-Status`). */
  readonly nextHop: string | undefined

  constructor (errorType: ProxyErrorType, message: string, options: ProxyErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'ProxyError'
    this.errorType = errorType
    this.code = proxyErrorCode(errorType)
    this.status = options.status ?? PROXY_ERROR_STATUS[errorType]
    this.details = options.details
    this.retryAfter = options.retryAfter
    this.nextHop = options.nextHop
  }
}

/** True when `value` is a {@link ProxyError}. */
export function isProxyError (value: unknown): value is ProxyError {
  return value instanceof ProxyError
}

/**
 * The 500 `proxy_internal_error` for a failure the proxy did not expect: the client sees the
 * usual answer, never `cause`, which the log keeps.
 */
export function unexpectedFailure (cause: unknown): ProxyError {
  return new ProxyError('proxy_internal_error', 'The proxy failed to handle the request.', { cause })
}

/**
 * The 500 `proxy_internal_error` for a state the code never expects to reach (a broken
 * invariant): the client sees the usual answer, the log names `what` (the error's cause).
 */
export function internalFailure (what: string): ProxyError {
  return unexpectedFailure(new Error(what))
}

/**
 * What was thrown, as an Error for Fastify's error path: an Error as it is, anything else the
 * 500 `proxy_internal_error` with it as the cause.
 */
export function asError (thrown: unknown): Error {
  return thrown instanceof Error ? thrown : unexpectedFailure(thrown)
}

/** The code of `ForwardProxyOptionsError`: an option of `forwardProxy` or `tlsInterception` is invalid. */
export const OPTIONS_ERROR_CODE = 'FFP_ERR_INVALID_OPTION'

/** The code of `ForwardProxyRuleError`: a host pattern or header rule is invalid. */
export const RULE_ERROR_CODE = 'FFP_ERR_INVALID_RULE'

/** Thrown at registration when an option is invalid; the message names the option. */
export class ForwardProxyOptionsError extends TypeError {
  /** Dotted path of the bad option, e.g. `limits.connectTimeout`. */
  readonly option: string
  /** Stable code of every invalid-option error. */
  readonly code = OPTIONS_ERROR_CODE

  constructor (option: string, problem: string) {
    super(`fastify-forward-proxy: option "${option}" ${problem}`)
    this.name = 'ForwardProxyOptionsError'
    this.option = option
  }
}

/** Thrown by the built-ins when a host pattern or header rule is unusable; the message says which. */
export class ForwardProxyRuleError extends TypeError {
  /** Stable code of every invalid-rule error. */
  readonly code = RULE_ERROR_CODE

  constructor (message: string) {
    super(`fastify-forward-proxy: ${message}`)
    this.name = 'ForwardProxyRuleError'
  }
}

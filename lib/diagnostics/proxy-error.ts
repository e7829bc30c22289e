/**
 * RFC 9209 error types this proxy reports in `Proxy-Status`, with the status each maps to.
 * One table, so a status and its error type never disagree; every type in it is one the proxy
 * raises (a test keeps it so).
 */
export const PROXY_ERROR_STATUS = {
  http_request_error: 400,
  http_request_denied: 403,
  destination_ip_prohibited: 403,
  proxy_authentication_required: 407,
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
export function proxyErrorCode (type: ProxyErrorType): ProxyErrorCode {
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

  constructor (errorType: ProxyErrorType, message: string, options: ProxyErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'ProxyError'
    this.errorType = errorType
    this.code = proxyErrorCode(errorType)
    this.status = options.status ?? PROXY_ERROR_STATUS[errorType]
    this.details = options.details
  }
}

/** True when `value` is a {@link ProxyError}. */
export function isProxyError (value: unknown): value is ProxyError {
  return value instanceof ProxyError
}

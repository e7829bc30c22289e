// Every error the package answers with or throws: Proxy-Status error types and their statuses,
// error codes, option and rule errors, and how network and policy failures map to them.

import { errors } from 'undici'

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
  /** Seconds after which the client may try again: sent as `Retry-After`. */
  retryAfter?: number
  /** The upstream proxy the failure came from (`host:port`, no credentials): `next-hop`. */
  nextHop?: string
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

/** The code of `ForwardProxyOptionsError`: an option of `forwardProxy` or `tlsInterception` is invalid. */
export const OPTIONS_ERROR_CODE = 'FFP_ERR_INVALID_OPTION'

/** The code of `ForwardProxyRuleError`: a host pattern or header rule is invalid. */
export const RULE_ERROR_CODE = 'FFP_ERR_INVALID_RULE'

/** The codes of `ForwardProxyCertificateError`, by reason. */
export const CERTIFICATE_ERROR_CODES = {
  invalid_option: 'FFP_ERR_CERTIFICATE_INVALID_OPTION',
  bad_ca_certificate: 'FFP_ERR_CERTIFICATE_BAD_CA_CERTIFICATE',
  bad_ca_key: 'FFP_ERR_CERTIFICATE_BAD_CA_KEY',
  key_mismatch: 'FFP_ERR_CERTIFICATE_KEY_MISMATCH',
  invalid_host: 'FFP_ERR_CERTIFICATE_INVALID_HOST',
  name_not_permitted: 'FFP_ERR_CERTIFICATE_NAME_NOT_PERMITTED',
  mint_failed: 'FFP_ERR_CERTIFICATE_MINT_FAILED'
} as const satisfies Record<ForwardProxyCertificateErrorReason, string>

/** The codes of `ForwardProxyEstError`, by reason. */
export const EST_ERROR_CODES = {
  invalid_option: 'FFP_ERR_EST_INVALID_OPTION',
  est_unreachable: 'FFP_ERR_EST_UNREACHABLE',
  est_timeout: 'FFP_ERR_EST_TIMEOUT',
  est_refused: 'FFP_ERR_EST_REFUSED',
  est_bad_response: 'FFP_ERR_EST_BAD_RESPONSE',
  est_untrusted_leaf: 'FFP_ERR_EST_UNTRUSTED_LEAF'
} as const satisfies Record<ForwardProxyEstErrorReason, string>

/** Every code an error of this package can carry. */
export type ForwardProxyErrorCode =
  | ProxyErrorCode
  | typeof OPTIONS_ERROR_CODE
  | typeof RULE_ERROR_CODE
  | typeof CERTIFICATE_ERROR_CODES[keyof typeof CERTIFICATE_ERROR_CODES]
  | typeof EST_ERROR_CODES[keyof typeof EST_ERROR_CODES]

/** Every code, each with the Proxy-Status type and status it answers with when it is a ProxyError's. */
export function allErrorCodes (): Array<{ code: ForwardProxyErrorCode, errorType?: ProxyErrorType, status?: number }> {
  return [
    ...(Object.keys(PROXY_ERROR_STATUS) as ProxyErrorType[]).map((errorType) => ({ code: proxyErrorCode(errorType), errorType, status: PROXY_ERROR_STATUS[errorType] })),
    { code: OPTIONS_ERROR_CODE },
    { code: RULE_ERROR_CODE },
    ...Object.values(CERTIFICATE_ERROR_CODES).map((code) => ({ code })),
    ...Object.values(EST_ERROR_CODES).map((code) => ({ code }))
  ]
}

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

/**
 * Why an EST operation failed:
 * - `invalid_option`: an option of the wrong type or out of range;
 * - `est_unreachable`: the EST server could not be reached or the TLS connection to it failed;
 * - `est_timeout`: the enrollment (including waits a 202 asked for) took longer than `timeout`;
 * - `est_refused`: the server answered with an error status (the status is in `estStatus`);
 * - `est_bad_response`: the answer was not base64 PKCS#7 certs-only, or held no usable certificate;
 * - `est_untrusted_leaf`: the issued leaf does not name the host, is not for the proxy's key,
 *   is not valid now, or does not chain to the `/cacerts` certificates.
 */
export type ForwardProxyEstErrorReason =
  | 'invalid_option'
  | 'est_unreachable'
  | 'est_timeout'
  | 'est_refused'
  | 'est_bad_response'
  | 'est_untrusted_leaf'

/**
 * Why a certificate operation failed:
 * - `invalid_option`: an option of the wrong type or out of range;
 * - `bad_ca_certificate`: the CA certificate is not PEM, not a CA, expired, or its chain is out of order;
 * - `bad_ca_key`: the key is not PEM, is encrypted without (or with a wrong) passphrase, or is of an unsupported type;
 * - `key_mismatch`: the key is not the CA certificate's;
 * - `invalid_host`: the host is not a canonical host name or IP address (wildcards included);
 * - `name_not_permitted`: the nameConstraints of the CA (or an intermediate) do not allow the host;
 * - `mint_failed`: signing or encoding the leaf failed.
 */
export type ForwardProxyCertificateErrorReason =
  | 'invalid_option'
  | 'bad_ca_certificate'
  | 'bad_ca_key'
  | 'key_mismatch'
  | 'invalid_host'
  | 'name_not_permitted'
  | 'mint_failed'

/**
 * Builds the RFC 9209 `Proxy-Status` value for an error, e.g.
 * `fastify-forward-proxy; error=dns_error; details="no such host"`.
 */
export function formatProxyStatus (pseudonym: string, error: ProxyError): string {
  let value = `${pseudonym}; error=${error.errorType}`
  if (error.details !== undefined) value += `; details=${quoteSfString(error.details)}`
  if (error.nextHop !== undefined) value += `; next-hop=${quoteSfString(error.nextHop)}`
  return value
}

/** Quotes a structured-field string (RFC 8941 section 3.3.3), dropping characters it cannot hold. */
function quoteSfString (text: string): string {
  const printable = text.replace(/[^\x20-\x7e]/g, '?')
  return `"${printable.replace(/["\\]/g, (c) => `\\${c}`)}"`
}

/** The `code` of a Node or undici error, if it has one. */
export function errorCode (error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = (error as { code: unknown }).code
    return typeof code === 'string' ? code : undefined
  }
  return undefined
}

/**
 * Maps a failure while resolving, connecting to or talking with a destination to the
 * ProxyError the client sees. ProxyErrors pass through unchanged; anything unknown becomes
 * 502 `connection_terminated` (never a 500 with internals).
 */
export function proxyErrorFromNetworkError (error: unknown): ProxyError {
  if (isProxyError(error)) return error
  if (error instanceof Error && isProxyError(error.cause)) return error.cause
  const options = { cause: error }
  // undici's HTTPParserError carries no `code` (its llhttp error lookup misses), so match the class.
  if (error instanceof errors.HTTPParserError) {
    return new ProxyError('http_protocol_error', 'The destination sent an invalid response.', options)
  }
  switch (errorCode(error)) {
    case 'ENOTFOUND':
    case 'ENODATA':
    case 'EAI_NONAME':
    case 'EAI_NODATA':
    case 'ESERVFAIL':
    case 'EAI_FAIL':
    case 'EAI_AGAIN':
      return new ProxyError('dns_error', 'The destination host name could not be resolved.', { ...options, details: 'name not resolved' })
    case 'ECONNREFUSED':
      return new ProxyError('connection_refused', 'The destination refused the connection.', options)
    case 'ETIMEDOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
      return new ProxyError('connection_timeout', 'Connecting to the destination timed out.', options)
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'EADDRNOTAVAIL':
      return new ProxyError('destination_unavailable', 'The destination is unreachable.', { ...options, status: 502 })
    case 'UND_ERR_HEADERS_TIMEOUT':
      return new ProxyError('http_response_timeout', 'The destination did not answer in time.', options)
    case 'UND_ERR_BODY_TIMEOUT':
      return new ProxyError('connection_read_timeout', 'The destination stopped sending its response.', options)
    case 'UND_ERR_HEADERS_OVERFLOW':
      return new ProxyError('http_response_header_section_size', 'The destination sent a response head that is too large.', options)
    case 'HPE_INVALID_CONSTANT':
    case 'HPE_INVALID_HEADER_TOKEN':
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_INVALID_TRANSFER_ENCODING':
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
    case 'UND_ERR_INFO':
    case 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH':
      return new ProxyError('http_protocol_error', 'The destination sent an invalid response.', options)
    default:
      return new ProxyError('connection_terminated', 'The connection to the destination failed.', options)
  }
}

/**
 * Why the destination policy refused a request or tunnel: its host is denied or not allowed,
 * its port is not allowed, its address is in a refused range, or a destination filter said no.
 */
export type PolicyRefusalReason = 'host' | 'port' | 'address' | 'filter'

const reasons = new WeakMap<ProxyError, PolicyRefusalReason>()

/** Marks `error` as a policy refusal for `reason` (read by the metrics) and returns it. */
export function policyRefusal (reason: PolicyRefusalReason, error: ProxyError): ProxyError {
  reasons.set(error, reason)
  return error
}

/**
 * The refusal reason of `error`, or undefined when it is not a policy refusal. A
 * `destination_ip_prohibited` error is one even when it crossed undici unmarked.
 */
export function policyRefusalReasonOf (error: ProxyError): PolicyRefusalReason | undefined {
  return reasons.get(error) ?? (error.errorType === 'destination_ip_prohibited' ? 'address' : undefined)
}

const refusalRules = new WeakMap<ProxyError, string>()

/**
 * Marks `error` as a refusal decided by `rule` and returns it: the access log line of the
 * request names the rule (`access.rule`) with `access.decision` `deny`. Rules name where the
 * policy is written: an option path (`destinations.deniedHosts`, `limits.maxConcurrentTunnels`),
 * a user's or a secret's own field (`users.<name>.allowedHosts`, `secrets.<name>.hosts`), or one
 * of the built-in words `auth`, `loop`, `request`, `transforms`.
 */
export function refusedBy (rule: string, error: ProxyError): ProxyError {
  refusalRules.set(error, rule)
  return error
}

/** True when `error` was marked by {@link refusedBy}. */
export function isMarkedRefusal (error: ProxyError): boolean {
  return refusalRules.has(error)
}

/**
 * The rule that refused a request answered with `error`, or undefined when `error` is a failure
 * rather than a refusal (a destination that could not be reached, a timeout, an internal error,
 * a client that stopped sending). Errors not marked by {@link refusedBy} are judged by type:
 * authentication (`auth`), an address in a refused range (`destinations.allowPrivateNetworks`,
 * also when it crossed undici unmarked), a loop (`loop`), and any other 4xx but 408, which the
 * request itself earned (`request`: malformed, unsupported, too large, or a host other than the
 * tunnel's). Authentication is told by its status, 407.
 */
export function refusalRuleOf (error: ProxyError): string | undefined {
  const rule = refusalRules.get(error)
  if (rule !== undefined) return rule
  if (error.status === 407) return 'auth'
  switch (error.errorType) {
    case 'destination_ip_prohibited': return 'destinations.allowPrivateNetworks'
    case 'proxy_loop_detected': return 'loop'
    default: return error.status >= 400 && error.status < 500 && error.status !== 408 ? 'request' : undefined
  }
}

/** The `details` of the authentication guard's 429 (`auth.failureLimit`), which the metrics count apart. */
export const AUTH_LOCKOUT_DETAILS = 'too many failed authentication attempts'

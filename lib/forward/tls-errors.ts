import { ProxyError, isProxyError } from '../diagnostics/proxy-error'
import { errorCode } from '../diagnostics/network-error'

// Verification results (OpenSSL's X509_V_ERR_* names as Node reports them, plus Node's host
// name check) that may be named to the client: they say what is wrong, nothing about the proxy.
const CERTIFICATE_CODES = new Set([
  'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'CERT_REVOKED', 'CERT_UNTRUSTED', 'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE', 'CERT_CHAIN_TOO_LONG', 'INVALID_CA', 'INVALID_PURPOSE',
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY', 'ERROR_IN_CERT_NOT_BEFORE_FIELD', 'ERROR_IN_CERT_NOT_AFTER_FIELD',
  'PATH_LENGTH_EXCEEDED', 'HOSTNAME_MISMATCH', 'ERR_TLS_CERT_ALTNAME_INVALID', 'ERR_TLS_CERT_ALTNAME_FORMAT'
])

// Verdicts that mean the chain does not end at a CA the proxy trusts (a private or self-signed CA).
const UNTRUSTED_ISSUER_CODES = new Set([
  'CERT_UNTRUSTED', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'
])

/**
 * What the operator can do about a destination certificate error, for the log line only (never
 * sent to the client): for an issuer the proxy does not trust, where to add that CA.
 */
export function certificateErrorHint (error: ProxyError): string | undefined {
  if (error.errorType !== 'tls_certificate_error' || error.details === undefined || !UNTRUSTED_ISSUER_CODES.has(error.details)) return undefined
  return 'the destination\'s certificate is not issued by a CA the proxy trusts: if this destination is yours, add its CA (PEM) with the tlsInterception option trustedDestinationCa (configuration file: "interception.trustedDestinationCa")'
}

/**
 * The 502 `tls_certificate_error` for a certificate the validation refused. The detail
 * is the verification code when it is a known one; the error's message (which lists the
 * certificate's names) stays in the logs.
 */
export function certificateProblem (error: Error): ProxyError {
  const code = errorCode(error)
  const details = code !== undefined && CERTIFICATE_CODES.has(code) ? code : 'certificate rejected'
  return new ProxyError('tls_certificate_error', 'The destination presented a certificate that failed validation.', { details, cause: error })
}

/**
 * Maps a failure during the TLS handshake with a destination: a certificate verdict becomes
 * `tls_certificate_error`, anything else (plain HTTP on the port, no common protocol version or
 * cipher, an alert, a reset or close mid-handshake) 502 `tls_protocol_error`. The
 * detail is OpenSSL's reason code (`ERR_SSL_...`) or `handshake failed`.
 */
export function tlsHandshakeError (error: unknown): ProxyError {
  if (isProxyError(error)) return error
  const code = errorCode(error)
  if (code !== undefined && CERTIFICATE_CODES.has(code)) return certificateProblem(error as Error)
  const details = code !== undefined && /^ERR_SSL_[A-Z0-9_]{1,80}$/.test(code) ? code : 'handshake failed'
  return new ProxyError('tls_protocol_error', 'The TLS handshake with the destination failed.', { details, cause: error })
}

import { EST_ERROR_CODES } from '../error-codes'

/**
 * Thrown by the EST certificate provider: a bad option at creation, or an enrollment that
 * failed (the intercepted handshake then fails: no fallback certificate is ever made). The
 * message names the EST endpoint and, when the server answered, its HTTP status; it never holds
 * the password, the Authorization header, the client key or a leaf key, so it is safe to log.
 */
export class ForwardProxyEstError extends Error {
  /** Stable reason, for code that reacts to one case. */
  readonly reason: ForwardProxyEstErrorReason
  /** The EST server's HTTP status, when it answered with one that was not a success. */
  readonly estStatus: number | undefined
  /** Stable code, `FFP_ERR_EST_` and the reason (without its `est_` prefix) in upper case. */
  readonly code: typeof EST_ERROR_CODES[ForwardProxyEstErrorReason]

  constructor (reason: ForwardProxyEstErrorReason, message: string, estStatus?: number) {
    super(`fastify-forward-proxy: ${message}`)
    this.name = 'ForwardProxyEstError'
    this.reason = reason
    this.code = EST_ERROR_CODES[reason]
    this.estStatus = estStatus
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

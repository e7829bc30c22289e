// The errors of the two certificate providers, with their reasons and codes.

import {
  CERTIFICATE_ERROR_CODES,
  EST_ERROR_CODES,
  ForwardProxyCertificateErrorReason,
  ForwardProxyEstErrorReason
} from '../protocol/errors'

/**
 * Thrown by the CA-backed certificate provider: an unusable CA certificate or key at creation,
 * a host no leaf may be issued for, or a failed mint. Messages never hold key material or
 * passphrases, so they are safe to log.
 */
export class ForwardProxyCertificateError extends Error {
  /** Stable reason, for code that reacts to one case. */
  readonly reason: ForwardProxyCertificateErrorReason
  /** Stable code, `FFP_ERR_CERTIFICATE_` and the reason in upper case. */
  readonly code: typeof CERTIFICATE_ERROR_CODES[ForwardProxyCertificateErrorReason]

  constructor (reason: ForwardProxyCertificateErrorReason, message: string) {
    super(`fastify-forward-proxy: ${message}`)
    this.name = 'ForwardProxyCertificateError'
    this.reason = reason
    this.code = CERTIFICATE_ERROR_CODES[reason]
  }
}

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

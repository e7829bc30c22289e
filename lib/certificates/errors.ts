// The errors of the two certificate providers, with their reasons and codes.

/**
 * Why an EST operation failed:
 * - `invalid_option`: an option of the wrong type or out of range;
 * - `est_unreachable`: the EST server could not be reached or the TLS connection to it failed;
 * - `est_timeout`: the enrollment (including waits a 202 asked for) took longer than `timeout`;
 * - `est_refused`: the server answered with an error status (the status is in `estStatus`);
 * - `est_bad_response`: the answer was not base64 PKCS#7 certs-only, held no usable certificate, or was larger than `maxResponseBytes`;
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

import { CERTIFICATE_ERROR_CODES } from '../error-codes'

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

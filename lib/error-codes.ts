import { PROXY_ERROR_STATUS, proxyErrorCode, type ProxyErrorCode, type ProxyErrorType } from './diagnostics/proxy-error'
import type { ForwardProxyCertificateErrorReason } from './certificates/certificate-error'
import type { ForwardProxyEstErrorReason } from './certificates/est-error'

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

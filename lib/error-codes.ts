// Every code an error of the plugins and the certificate providers carries, as one type.

import type { ProxyErrorCode, OPTIONS_ERROR_CODE, RULE_ERROR_CODE } from './protocol/errors'
import type { UsageErrorCode } from './core/usage-errors'
import type { CERTIFICATE_ERROR_CODES, EST_ERROR_CODES } from './certificates/errors'
import type { CaptureErrorCode } from './capture/capture-file-errors'

/** Every code an error of this package can carry (the bin's own errors aside). */
export type ForwardProxyErrorCode =
  | ProxyErrorCode
  | typeof OPTIONS_ERROR_CODE
  | typeof RULE_ERROR_CODE
  | typeof CERTIFICATE_ERROR_CODES[keyof typeof CERTIFICATE_ERROR_CODES]
  | typeof EST_ERROR_CODES[keyof typeof EST_ERROR_CODES]
  | UsageErrorCode
  | CaptureErrorCode

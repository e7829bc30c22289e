import '../types/augment'

export { forwardProxy } from './plugin'
export { ForwardProxyOptionsError, DEFAULT_LIMITS, DEFAULT_PSEUDONYM } from './options'
export { ProxyError, PROXY_ERROR_STATUS, type ProxyErrorType } from './diagnostics/proxy-error'
export { timingSafeEqualText } from './security/constant-time'
export type * from '../types/index'
export { proxyClientErrorHandler, createProxyClientErrorHandler } from './diagnostics/client-error-handler'

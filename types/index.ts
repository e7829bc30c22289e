import './augment'

export type { ForwardProxyDestination } from './destination'
export type { ForwardProxyControl } from './control'
export type { ForwardProxyUser, ForwardProxyCredentialCheck } from './user'
export type {
  ForwardProxyOptions,
  ForwardProxyAuthOptions,
  ForwardProxyAuthFailureLimit,
  ForwardProxyDestinationOptions,
  ForwardProxyLimitOptions,
  ForwardProxyResolver,
  ResolvedAddress
} from './options'
export type {
  ForwardProxyInterceptionSelector,
  ForwardProxyInterceptionSelectorSource,
  ForwardProxyCertificateProvider,
  ForwardProxyCertificateProviderSource,
  ForwardProxyCertificate,
  ForwardProxyPemCertificate,
  ForwardProxyRequestTransform,
  ForwardProxyOutgoingRequest,
  ForwardProxyIncomingResponse,
  ForwardProxyDestinationFilter,
  ForwardProxyClientProtocols,
  ForwardProxyDestinationCertificateCheck,
  ForwardProxyInterception,
  ForwardProxyInterceptionAddress,
  TlsInterceptionOptions
} from './interception'
export type { ForwardProxyHeaderRule } from './header-rules'
export type {
  ForwardProxyCaProviderOptions,
  ForwardProxyCaCertificateProvider,
  ForwardProxyIssuedLeaf,
  ForwardProxyLeafKeyType
} from './certificates'
export type { ForwardProxyEstProviderOptions, ForwardProxyEstCertificateProvider } from './est'

import type {
  ForwardProxyCertificateProviderSource,
  ForwardProxyInterceptionSelectorSource
} from '../../types/interception'
import type { InterceptionSettings } from './interception-settings'
import type { InterceptionEndpoint } from './interception-endpoint'

/** What a registered tlsInterception plugin gives the CONNECT flow. */
export interface InterceptionRuntime {
  readonly settings: InterceptionSettings
  readonly endpoint: InterceptionEndpoint
  /** From the options or the `forwardProxyInterceptionSelector` decorator (known once ready); null intercepts nothing. */
  selector: ForwardProxyInterceptionSelectorSource | null
  /** From the options or the `forwardProxyCertificateProvider` decorator (known once ready). */
  certificateProvider: ForwardProxyCertificateProviderSource | null
}

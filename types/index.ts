import './augment'

export type { ForwardProxyDestination } from './destination'
export type { ForwardProxyControl } from './control'
export type { ForwardProxyUser, ForwardProxyCredentialCheck } from './user'
export type {
  ForwardProxyOptions,
  ForwardProxyAuthOptions,
  ForwardProxyDestinationOptions,
  ForwardProxyLimitOptions,
  ForwardProxyResolver,
  ResolvedAddress
} from './options'

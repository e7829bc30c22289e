import type { Agent } from 'undici'
import type { ResolvedProxySettings } from './options'
import type { TunnelRegistry } from './connect/tunnel-registry'
import type { DestinationPolicy } from './security/destination-policy'
import type { DestinationConnectorSettings } from './security/destination-connector'

/** Everything one registration of the proxy shares between its parts. */
export interface ProxyRuntime {
  readonly settings: ResolvedProxySettings
  readonly policy: DestinationPolicy
  readonly connector: DestinationConnectorSettings
  readonly tunnels: TunnelRegistry
  readonly dispatcher: Agent
}

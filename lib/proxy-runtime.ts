import type { Agent } from 'undici'
import type { ForwardProxyRequestTransform } from '../types/interception'
import type { ResolvedProxySettings } from './options'
import type { TunnelRegistry } from './connect/tunnel-registry'
import type { DestinationPolicy } from './security/destination-policy'
import type { DestinationConnectorSettings } from './security/destination-connector'
import type { DestinationTlsSettings } from './forward/destination-tls-settings'
import type { InterceptionRuntime } from './interception/interception-runtime'
import type { ForwardProxyControl } from '../types/control'

/** Everything one registration of the proxy shares between its parts. */
export interface ProxyRuntime {
  readonly settings: ResolvedProxySettings
  readonly policy: DestinationPolicy
  readonly connector: DestinationConnectorSettings
  readonly tunnels: TunnelRegistry
  /** Carries requests to `http://` destinations. */
  readonly dispatcher: Agent
  /** Carries requests to `https://` destinations (inside intercepted tunnels), reading `destinationTls` on every connect. */
  readonly tlsDispatcher: Agent
  /**
   * How `https://` destinations are validated. Defaults to Node's trust store and only
   * error-free certificates; the tlsInterception plugin replaces it at registration.
   */
  destinationTls: DestinationTlsSettings
  /**
   * Transforms run on every forwarded request, in this order: the
   * `transforms` option first, then `fastify.forwardProxy.addTransform` calls (the
   * tlsInterception plugin appends its own). Not changed once the server is ready.
   */
  readonly transforms: ForwardProxyRequestTransform[]
  /**
   * Set by the tlsInterception plugin when it is registered; absent means no tunnel is
   * intercepted (optional so that runtimes built without the plugin need not name it).
   */
  interception?: InterceptionRuntime
}

const runtimes = new WeakMap<ForwardProxyControl, ProxyRuntime>()

/** Links a registration's `fastify.forwardProxy` decorator to its runtime, for plugins built on it. */
export function rememberProxyRuntime (control: ForwardProxyControl, runtime: ProxyRuntime): void {
  runtimes.set(control, runtime)
}

/** The runtime behind a `fastify.forwardProxy` decorator, or undefined for anything else. */
export function proxyRuntimeOf (control: unknown): ProxyRuntime | undefined {
  return typeof control === 'object' && control !== null ? runtimes.get(control as ForwardProxyControl) : undefined
}

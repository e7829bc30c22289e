// Open opaque tunnels checked again after a reconfiguration: a tunnel whose user, destination or
// user's hosts are no longer admitted is closed (intercepted tunnels are checked per request).

import type { ForwardProxyDestination } from '../../types/destination'
import type { ProxyRuntime } from '../core/runtime'
import type { TunnelGrant } from '../security/tunnel-grant'

/**
 * Checks every open opaque tunnel against the configuration now in force (after a
 * reconfiguration): its user again (the credentials it opened with, against the users or
 * `validate` in force), then the destination policy and the user's hosts for its destination
 * (a host list in report mode closes nothing).
 * A tunnel that no longer passes is closed; intercepted tunnels are checked per request instead.
 */
export function recheckOpenTunnels (runtime: ProxyRuntime): void {
  for (const tunnel of runtime.tunnels.revocable) {
    const close = (): void => tunnel.close()
    const decide = (granted: boolean): void => {
      if (!granted || !stillAdmitted(runtime, tunnel.grant, tunnel.destination)) close()
    }
    const granted = tunnel.grant.stillGranted(runtime.settings)
    if (typeof granted === 'boolean') decide(granted)
    else granted.then(decide, close)
  }
}

function stillAdmitted (runtime: ProxyRuntime, grant: TunnelGrant, destination: ForwardProxyDestination): boolean {
  try {
    runtime.policy.checkDestination(destination)
    return runtime.userPolicy.admitsOpenTunnel(grant.user, destination)
  } catch {
    return false
  }
}

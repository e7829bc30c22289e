// Clients that refuse the proxy's certificate (they pin, or were never given the operator CA):
// their refusals counted per user (or, without authentication, per client address) and host,
// and the passthrough that starts after enough of them in a row.

import type { ForwardProxyDestination } from '../../types/destination'
import type { ForwardProxyPassthroughOnClientRefusal } from '../../types/interception'
import type { ClientRefusalPolicy, TunnelClientIdentity } from '../core/runtime'

/**
 * The error codes of a TLS alert the client sent about our certificate: `unknown_ca`,
 * `bad_certificate`, `certificate_unknown`, `access_denied`. Anything else (a client that closes
 * without an alert, as Go drops its spare connections) is not a refusal.
 */
const REFUSAL_ALERTS = new Set([
  'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA',
  'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE',
  'ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN',
  'ERR_SSL_TLSV1_ALERT_ACCESS_DENIED'
])

/** True when a failed handshake's error is the client refusing the certificate it was shown. */
export function isClientRefusal (error: { code?: unknown }): boolean {
  return typeof error.code === 'string' && REFUSAL_ALERTS.has(error.code)
}

// Entries of users and hosts that stopped refusing are dropped once this many are kept.
const MAX_ENTRIES = 10_000

interface Refusals {
  inARow: number
  /** While this process's clock is before it, the tunnels are relayed opaquely. */
  until: number
}

/** The refusals of `passthroughOnClientRefusal`, and the passthroughs they start. */
export class ClientRefusals implements ClientRefusalPolicy {
  readonly #after: number
  readonly #for: number
  readonly #now: () => number
  readonly #entries = new Map<string, Refusals>()

  constructor (settings: Readonly<ForwardProxyPassthroughOnClientRefusal>, now: () => number = Date.now) {
    this.#after = settings.after
    this.#for = settings.for
    this.#now = now
  }

  passingThrough (client: TunnelClientIdentity, destination: ForwardProxyDestination): boolean {
    const entry = this.#entries.get(keyOf(client, destination))
    return entry !== undefined && this.#now() < entry.until
  }

  refused (client: TunnelClientIdentity, destination: ForwardProxyDestination): boolean {
    const key = keyOf(client, destination)
    let entry = this.#entries.get(key)
    if (entry === undefined) {
      if (this.#entries.size >= MAX_ENTRIES) this.#dropIdle()
      entry = { inARow: 0, until: 0 }
      this.#entries.set(key, entry)
    }
    entry.inARow += 1
    if (entry.inARow < this.#after) return false
    entry.inARow = 0
    entry.until = this.#now() + this.#for
    return true
  }

  accepted (client: TunnelClientIdentity, destination: ForwardProxyDestination): void {
    this.#entries.delete(keyOf(client, destination))
  }

  #dropIdle (): void {
    const now = this.#now()
    for (const [key, entry] of this.#entries) if (now >= entry.until) this.#entries.delete(key)
  }
}

function keyOf (client: TunnelClientIdentity, destination: ForwardProxyDestination): string {
  const who = client.user === null ? `address ${client.address ?? ''}` : `user ${client.user}`
  return `${who}\n${destination.host}:${destination.port}`
}

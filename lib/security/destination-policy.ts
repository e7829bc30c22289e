import type { ForwardProxyDestination } from '../../types/destination'
import { ProxyError } from '../diagnostics/proxy-error'
import { policyRefusal } from '../diagnostics/policy-refusal'
import { cidrContains, type Cidr } from './cidr'
import { parseIP } from './ip-address'
import { matchesAny, type HostPattern } from './host-pattern'
import { classifyAddress } from './special-purpose-ranges'

// Most distinct address texts remembered; past it the cache starts over.
const VERDICT_CACHE_SIZE = 1024

/** The validated, compiled form of the destination options. */
export interface DestinationPolicySettings {
  readonly allowedHosts: readonly HostPattern[]
  readonly deniedHosts: readonly HostPattern[]
  /** null means every port. */
  readonly allowedPorts: ReadonlySet<number> | null
  readonly allowPrivateNetworks: boolean
  readonly allowedNetworks: readonly Cidr[]
}

/**
 * Decides which destinations may be reached (by default ports 80 and 443, public addresses only). Names and ports are checked
 * when a request arrives; addresses are checked on every connect, after DNS, and only the
 * addresses that pass are dialed, so DNS rebinding cannot slip through.
 */
export class DestinationPolicy {
  readonly #settings: DestinationPolicySettings
  // Verdicts by address text (null: not an IP literal). The settings never change, and the
  // same few destinations come back on every request and connect.
  readonly #verdicts = new Map<string, boolean | null>()

  constructor (settings: DestinationPolicySettings) {
    this.#settings = settings
  }

  /**
   * Checks the name and port of a destination. Throws a 403 `http_request_denied` ProxyError
   * when the host is denied or not allowed, or the port is not allowed; a 403
   * `destination_ip_prohibited` when the host is an IP literal in a refused range.
   */
  checkDestination (destination: ForwardProxyDestination): void {
    const { allowedHosts, deniedHosts, allowedPorts } = this.#settings
    if (matchesAny(deniedHosts, destination.host) || !matchesAny(allowedHosts, destination.host)) {
      throw policyRefusal('host', new ProxyError('http_request_denied', 'Destination host is not allowed by the proxy policy.', { details: 'host not allowed' }))
    }
    if (allowedPorts !== null && !allowedPorts.has(destination.port)) {
      throw policyRefusal('port', new ProxyError('http_request_denied', 'Destination port is not allowed by the proxy policy.', { details: 'port not allowed' }))
    }
    if (this.#verdictOf(destination.host) === false) this.#refuseAddress(destination.host)
  }

  /** True when a resolved address may be dialed. */
  isAddressAllowed (address: string): boolean {
    return this.#verdictOf(address) === true
  }

  /** Throws a 403 `destination_ip_prohibited` ProxyError when `address` may not be dialed. */
  checkAddress (address: string): void {
    if (!this.isAddressAllowed(address)) this.#refuseAddress(address)
  }

  #refuseAddress (address: string): never {
    const category = classifyAddress(address) ?? 'not allowed'
    throw new ProxyError('destination_ip_prohibited', 'Destination address is not allowed by the proxy policy.', { details: `${category} address` })
  }

  #verdictOf (address: string): boolean | null {
    const known = this.#verdicts.get(address)
    if (known !== undefined) return known
    const bytes = parseIP(address)
    const verdict = bytes === null ? null : this.#judge(bytes)
    if (this.#verdicts.size >= VERDICT_CACHE_SIZE) this.#verdicts.clear()
    this.#verdicts.set(address, verdict)
    return verdict
  }

  #judge (bytes: Uint8Array): boolean {
    if (this.#settings.allowedNetworks.some((range) => cidrContains(range, bytes))) return true
    if (this.#settings.allowPrivateNetworks) return true
    return classifyAddress(bytes) === null
  }
}

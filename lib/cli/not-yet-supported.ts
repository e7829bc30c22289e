import { ConfigError } from './config-error'

/**
 * Refuses the parts of the configuration contract (DESIGN section 5) that later versions
 * implement, with a message saying so, before schema validation would call them merely
 * "unknown": an operator copying the documented contract learns why.
 * @throws ConfigError naming the key.
 */
export function rejectNotYetSupported (value: unknown, source: string): void {
  if (typeof value !== 'object' || value === null || !('interception' in value)) return
  const interception = value.interception
  if (typeof interception !== 'object' || interception === null) return
  if ('est' in interception) {
    throw new ConfigError(`${source}: /interception/est: EST enrollment is not supported yet in this version; give the operator CA as /interception/ca (or leave both out for a development CA in dataDirectory)`)
  }
}

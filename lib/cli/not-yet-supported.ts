import { ConfigError } from './config-error'

/** Keys of the configuration contract (DESIGN section 5) that later versions implement. */
const NOT_YET_SUPPORTED = {
  interception: 'TLS interception is not supported yet in this version',
  headers: 'header rules are not supported yet in this version (they come with TLS interception)'
} as const

/**
 * Refuses the keys of later versions with a message saying so, before schema validation would
 * call them merely "unknown": an operator copying the documented contract learns why.
 * @throws ConfigError naming the key.
 */
export function rejectNotYetSupported (value: unknown, source: string): void {
  if (typeof value !== 'object' || value === null) return
  for (const key of ['interception', 'headers'] as const) {
    if (key in value) throw new ConfigError(`${source}: /${key}: ${NOT_YET_SUPPORTED[key]}`)
  }
}

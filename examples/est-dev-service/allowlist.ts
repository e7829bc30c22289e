import { leafName } from '../../lib/certificates/leaf'

/**
 * The hosts the service signs for: exact names or IP addresses, and `*.suffix` entries that
 * match any name below `suffix` (never `suffix` itself). Entries are compared in lower case.
 */
export class Allowlist {
  readonly #exact = new Set<string>()
  readonly #suffixes: string[] = []

  constructor (entries: readonly string[]) {
    for (const entry of entries.map((value) => value.trim().toLowerCase()).filter((value) => value !== '')) {
      if (entry.startsWith('*.')) this.#suffixes.push(entry.slice(1))
      else this.#exact.add(entry)
    }
  }

  /** True when `host` is a canonical host name or IP address the list allows. */
  allows (host: string): boolean {
    try {
      leafName(host) // canonical names only: no wildcard, no upper case, no trailing dot
    } catch {
      return false
    }
    return this.#exact.has(host) || this.#suffixes.some((suffix) => host.endsWith(suffix))
  }
}

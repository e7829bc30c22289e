// The cache of minted or enrolled leaves: one issue per name at a time, renewal before expiry, a
// bounded size.

import type { ForwardProxyIssuedLeaf } from '../../types/certificates'
import { recordCertificateLookup, startCertificateIssue } from '../telemetry/tls-metrics'

/** A cached leaf and when it is due for renewal, in milliseconds since the epoch. */
export interface CachedLeaf {
  readonly leaf: ForwardProxyIssuedLeaf
  readonly renewAt: number
}

/** How the cache mints and keeps time. */
export interface LeafCacheSettings {
  /** Most hosts kept; the least recently used is dropped beyond it. */
  readonly maxEntries: number
  readonly now: () => number
  /** Mints a leaf for a host; called at most once at a time per host. */
  readonly mint: (host: string) => Promise<CachedLeaf>
  readonly onRenewalError: (host: string, error: Error) => void
}

interface Entry {
  current: CachedLeaf | null
  pending: Promise<CachedLeaf> | null
  /** Background renewals that failed in a row since the current leaf was minted. */
  renewalFailures: number
  /** No background renewal before this time (backoff after failures). */
  renewalRetryAt: number
}

/** First wait after a failed background renewal; doubled after each further failure. */
export const RENEWAL_RETRY_BASE_MS = 1000
/** Longest wait between background renewal attempts. */
export const RENEWAL_RETRY_MAX_MS = 300_000

/**
 * Leaves per host (ports do not matter: a leaf names the host only), in memory:
 * - bounded: a least-recently-used entry is dropped when a new host would exceed `maxEntries`;
 * - single-flight: concurrent requests for a host share one mint;
 * - renewed before expiry: past `renewAt` the current leaf is still served while a new one is
 *   minted in the background; an expired leaf is never served, the caller waits for a new one;
 * - failed renewals back off (1 s, doubling, at most 5 min between attempts), so a CA or EST
 *   service that is down is not asked again on every handshake while a valid leaf remains;
 * - a caller's abort ends its own wait only, never the mint others share.
 */
export class LeafCache {
  readonly #settings: LeafCacheSettings
  readonly #entries = new Map<string, Entry>()

  constructor (settings: LeafCacheSettings) {
    this.#settings = settings
  }

  /** Number of hosts held (with a leaf, or with a mint under way). */
  get size (): number {
    return this.#entries.size
  }

  /** Drops every entry; mints under way still settle for the callers waiting on them. */
  clear (): void {
    this.#entries.clear()
  }

  /** The leaf for `host`: cached, or minted once for every concurrent caller. */
  async get (host: string, signal?: AbortSignal): Promise<ForwardProxyIssuedLeaf> {
    signal?.throwIfAborted()
    const entry = this.#touch(host)
    const now = this.#settings.now()
    const current = entry.current
    if (current !== null && now < current.leaf.notAfter.getTime()) {
      if (now >= current.renewAt && now >= entry.renewalRetryAt && entry.pending === null) this.#renewInBackground(host, entry)
      recordCertificateLookup(true)
      return current.leaf
    }
    recordCertificateLookup(false)
    const pending = entry.pending ?? this.#startMint(host, entry)
    return (await waitUnlessAborted(pending, signal)).leaf
  }

  #touch (host: string): Entry {
    const existing = this.#entries.get(host)
    if (existing !== undefined) {
      this.#entries.delete(host)
      this.#entries.set(host, existing)
      return existing
    }
    const entry: Entry = { current: null, pending: null, renewalFailures: 0, renewalRetryAt: 0 }
    this.#entries.set(host, entry)
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.#settings.maxEntries) break
      this.#entries.delete(oldest)
    }
    return entry
  }

  #startMint (host: string, entry: Entry): Promise<CachedLeaf> {
    const issued = startCertificateIssue()
    const pending = this.#settings.mint(host)
    entry.pending = pending
    pending.then((minted) => {
      issued(true)
      entry.current = minted
      entry.renewalFailures = 0
      entry.renewalRetryAt = 0
    }, () => {
      issued(false)
      // No negative caching: the next request for the host tries again.
      if (entry.current === null && this.#entries.get(host) === entry) this.#entries.delete(host)
    }).finally(() => {
      if (entry.pending === pending) entry.pending = null
    })
    return pending
  }

  #renewInBackground (host: string, entry: Entry): void {
    this.#startMint(host, entry).catch((error: unknown) => {
      entry.renewalFailures += 1
      const wait = Math.min(RENEWAL_RETRY_BASE_MS * 2 ** (entry.renewalFailures - 1), RENEWAL_RETRY_MAX_MS)
      entry.renewalRetryAt = this.#settings.now() + wait
      this.#settings.onRenewalError(host, error instanceof Error ? error : new Error(String(error)))
    })
  }
}

async function waitUnlessAborted<T> (shared: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return await shared
  signal.throwIfAborted()
  return await new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    shared.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}

import type { Attributes } from '@opentelemetry/api'
import { proxyInstruments } from './proxy-instruments'

/** The attribute of `forward_proxy.certificate.cache.lookups`: `hit` or `miss`. */
export const CACHE_RESULT_ATTRIBUTE = 'forward_proxy.certificate.cache.result'

const HIT: Attributes = Object.freeze({ [CACHE_RESULT_ATTRIBUTE]: 'hit' })
const MISS: Attributes = Object.freeze({ [CACHE_RESULT_ATTRIBUTE]: 'miss' })
const FAILED: Attributes = Object.freeze({ 'error.type': 'issue_failed' })
const NO_ATTRIBUTES: Attributes = Object.freeze({})

/** Counts a leaf cache lookup: served from the cache (`hit`) or waiting for a mint (`miss`). */
export function recordCertificateLookup (hit: boolean): void {
  proxyInstruments().certificateCacheLookups.add(1, hit ? HIT : MISS)
}

/**
 * Times one mint of a leaf: call at its start, then call the returned function once it has
 * settled. A success counts one `forward_proxy.certificate.issued`; both record the duration.
 */
export function startCertificateIssue (): (succeeded: boolean) => void {
  const started = performance.now()
  return (succeeded) => {
    const instruments = proxyInstruments()
    if (succeeded) instruments.certificatesIssued.add(1, NO_ATTRIBUTES)
    instruments.certificateIssueDuration.record((performance.now() - started) / 1000, succeeded ? NO_ATTRIBUTES : FAILED)
  }
}

// What interception records on the proxy's instruments: client TLS handshakes (their duration
// by TLS version, and why one did not complete) and the leaf certificates (cache lookups, mints).

import type { Attributes } from '@opentelemetry/api'
import { proxyInstruments } from './metrics'

/**
 * Why a client TLS handshake on an intercepted tunnel did not complete: no usable certificate
 * (the provider returned null, failed or gave unusable PEM), the handshake timeout, a TLS
 * failure (not TLS at all, or the client refused the certificate), or the client left.
 */
export type HandshakeFailure = 'certificate_unavailable' | 'timeout' | 'tls_error' | 'client_closed'

const FAILURE_ATTRIBUTES: Readonly<Record<HandshakeFailure, Attributes>> = Object.freeze({
  certificate_unavailable: Object.freeze({ 'error.type': 'certificate_unavailable' }),
  timeout: Object.freeze({ 'error.type': 'timeout' }),
  tls_error: Object.freeze({ 'error.type': 'tls_error' }),
  client_closed: Object.freeze({ 'error.type': 'client_closed' })
})

const versionAttributes = new Map<string, Attributes>()

/** Records a completed handshake that started at `started` (`performance.now()`). */
export function recordHandshake (started: number, protocol: string | null): void {
  const instruments = proxyInstruments()
  if (!instruments.enabled) return
  // Node reports `TLSv1.3`; the semantic conventions want `1.3`.
  const version = (protocol ?? 'unknown').replace(/^TLSv/, '')
  let attributes = versionAttributes.get(version)
  if (attributes === undefined) {
    attributes = Object.freeze({ 'tls.protocol.version': version })
    versionAttributes.set(version, attributes)
  }
  instruments.handshakeDuration.record((performance.now() - started) / 1000, attributes)
}

/** Counts a handshake that did not complete. */
export function recordHandshakeFailure (failure: HandshakeFailure): void {
  proxyInstruments().handshakeFailures.add(1, FAILURE_ATTRIBUTES[failure])
}

/** The attribute of `forward_proxy.certificate.cache.lookups`: `hit` or `miss`. */
const CACHE_RESULT_ATTRIBUTE = 'forward_proxy.certificate.cache.result'

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

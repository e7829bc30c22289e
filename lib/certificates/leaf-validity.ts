import { ForwardProxyCertificateError } from './certificate-error'

/** How far a leaf's validity starts before it is minted, for clients whose clocks run behind. */
export const BACKDATE_MS = 5 * 60_000

/** Validity of one leaf and when the cache should replace it. */
export interface LeafValidity {
  readonly notBefore: Date
  readonly notAfter: Date
  /** From this time on the cache re-mints in the background (milliseconds since the epoch). */
  readonly renewAt: number
}

/**
 * The validity window of a leaf minted at `now`: from 5 minutes before (never before the CA's
 * notBefore) for `lifetimeMs` (never past the CA's notAfter), in whole seconds as X.509 times
 * hold them. Renewal is due when a third of the window remains; a leaf cut short by the CA's
 * end is not renewed early, since a new one could not last longer.
 * @throws ForwardProxyCertificateError (`mint_failed`) when the CA has expired.
 */
export function leafValidity (now: number, lifetimeMs: number, ca: { readonly notBefore: number, readonly notAfter: number }): LeafValidity {
  if (now >= ca.notAfter) {
    throw new ForwardProxyCertificateError('mint_failed', `the CA certificate expired on ${new Date(ca.notAfter).toISOString()}; no leaf can be issued`)
  }
  const notBefore = Math.max(wholeSeconds(now - BACKDATE_MS), ca.notBefore)
  const wanted = wholeSeconds(now + lifetimeMs)
  const notAfter = Math.min(wanted, ca.notAfter)
  const renewAt = wanted > ca.notAfter ? notAfter : notBefore + Math.floor((notAfter - notBefore) * 2 / 3)
  return { notBefore: new Date(notBefore), notAfter: new Date(notAfter), renewAt }
}

function wholeSeconds (ms: number): number {
  return Math.floor(ms / 1000) * 1000
}

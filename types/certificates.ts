import type { SecureContext } from 'node:tls'
import type { ForwardProxyCertificateProvider } from './interception'
import type { ForwardProxyDestination } from './destination'

/** Key algorithm of minted leaf certificates: ECDSA P-256 (default) or RSA 2048. */
export type ForwardProxyLeafKeyType = 'ecdsa-p256' | 'rsa-2048'

/**
 * Options of `createCaCertificateProvider`: a CA the operator controls and how leaves
 * are minted and cached. The CA key never leaves the provider: it is not logged, not put in
 * error messages and not kept in extractable form.
 */
export interface ForwardProxyCaProviderOptions {
  /**
   * The issuing CA certificate (PEM). It must be a CA (basicConstraints cA true, keyUsage with
   * keyCertSign) and currently valid. Further PEM certificates after it are the CA's own
   * intermediates, each issued by the next, and are sent to clients after it.
   */
  cert: string | Buffer
  /** The CA's private key (PEM): PKCS#8 (encrypted or not), PKCS#1 RSA or SEC1 EC. */
  key: string | Buffer
  /** Passphrase of an encrypted key. */
  passphrase?: string | Buffer
  /** Key algorithm of leaves. Default `'ecdsa-p256'`. */
  keyType?: ForwardProxyLeafKeyType
  /** Lifetime of a leaf in days (a leaf never outlives the CA). Default 7, at most 397. */
  validityDays?: number
  /** Most leaves kept in memory; the least recently used is dropped beyond it. Default 1000. */
  cacheSize?: number
  /**
   * Leaf key pairs generated ahead of need, so a first handshake does not wait for key
   * generation. Default 0 for ECDSA (generation takes well under a millisecond) and 4 for RSA.
   */
  keyPoolSize?: number
  /** Clock in milliseconds since the epoch. Default `Date.now`; tests inject their own. */
  now?: () => number
  /** Called after each leaf is minted (metrics, logs, tests). Must not throw. */
  onLeafIssued?: (leaf: ForwardProxyIssuedLeaf) => void
  /**
   * Called when a renewal in the background fails; the current leaf is still served until it
   * expires, and the next handshake tries again. Must not throw. The error holds no key material.
   */
  onRenewalError?: (host: string, error: Error) => void
}

/** One minted leaf certificate, as cached by the provider. */
export interface ForwardProxyIssuedLeaf {
  /** The host the leaf was issued for (its subject CN and only SAN). */
  readonly host: string
  /** The leaf certificate (PEM). */
  readonly cert: string
  /** The leaf's private key (PEM, unencrypted PKCS#8). */
  readonly key: string
  /** The certificates sent after the leaf (PEM): the issuing CA, then its own intermediates. */
  readonly chain: string
  /** Serial number as upper-case hex. */
  readonly serialNumber: string
  /** Start of validity (5 minutes before minting, never before the CA's). */
  readonly notBefore: Date
  /** End of validity (never after the CA's). */
  readonly notAfter: Date
  /** The secure context built once from cert, chain and key. */
  readonly secureContext: SecureContext
}

/**
 * A certificate provider that mints leaves from the operator's CA with PKI.js, caching them
 * per host (bounded LRU, single-flight, renewed before expiry).
 */
export interface ForwardProxyCaCertificateProvider extends ForwardProxyCertificateProvider {
  /** Resolves to the leaf's secure context; rejects when minting fails or `signal` aborts. */
  getCertificate (destination: ForwardProxyDestination, signal: AbortSignal): Promise<SecureContext>
  /**
   * The cached leaf for `host`, minted when there is none or it expired. Aborting `signal`
   * stops this caller's wait, never the mint other callers share.
   */
  getLeaf (host: string, signal?: AbortSignal): Promise<ForwardProxyIssuedLeaf>
  /** Number of hosts held in the cache (minted or being minted). */
  readonly cacheSize: number
  /** Drops every cached leaf; mints already under way still settle for their callers. */
  clear (): void
}

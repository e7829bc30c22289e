// The certificate provider that mints leaves with the operator's CA.

import type {
  ForwardProxyCaCertificateProvider,
  ForwardProxyCaProviderOptions,
  ForwardProxyIssuedLeaf,
  ForwardProxyLeafKeyType
} from '../../types/certificates'
import { loadCertificateAuthority, mintLeaf } from './ca'
import { nameConstraintViolation } from './name-constraints'
import { ForwardProxyCertificateError } from './errors'
import { LeafCache } from './leaf-cache'
import { LeafKeyPool, leafName, leafValidity } from './leaf'

const DAY_MS = 86_400_000
const KNOWN_OPTIONS = ['cert', 'key', 'passphrase', 'keyType', 'validityDays', 'cacheSize', 'keyPoolSize', 'now', 'onLeafIssued', 'onRenewalError']
const KEY_TYPES: readonly ForwardProxyLeafKeyType[] = ['ecdsa-p256', 'rsa-2048']
// CA/Browser Forum limit for publicly trusted TLS leaves; private CAs are held to it too.
const MAX_VALIDITY_DAYS = 397

/** Defaults of `createCaCertificateProvider`. */
export const CA_PROVIDER_DEFAULTS = {
  keyType: 'ecdsa-p256',
  validityDays: 7,
  cacheSize: 1000,
  keyPoolSize: { 'ecdsa-p256': 0, 'rsa-2048': 4 }
} as const

/**
 * Creates the certificate provider backed by a CA the operator
 * controls: leaves for each intercepted host are minted and signed by the CA key,
 * and cached per host (bounded LRU, single-flight, renewed before expiry). Pass it as
 * `certificateProvider` of `tlsInterception`.
 *
 * The CA is checked now, so a bad CA fails start-up rather than the first handshake.
 * The options object is not kept; the key is held only as a non-extractable WebCrypto key.
 * @throws ForwardProxyCertificateError when an option is invalid (`invalid_option`), the
 * certificate is not a valid CA (`bad_ca_certificate`), the key is unreadable or unsupported
 * (`bad_ca_key`), or the key is not the certificate's (`key_mismatch`). `getLeaf` and
 * `getCertificate` reject a host the CA's nameConstraints do not allow (`name_not_permitted`),
 * since clients would refuse that leaf anyway. Messages never hold
 * the key or the passphrase.
 */
export function createCaCertificateProvider (options: ForwardProxyCaProviderOptions): ForwardProxyCaCertificateProvider {
  if (typeof options !== 'object' || options === null) throw invalidOption('options', 'must be an object')
  for (const key of Object.keys(options)) {
    if (!KNOWN_OPTIONS.includes(key)) throw invalidOption(key, `is not a known option (known: ${KNOWN_OPTIONS.join(', ')})`)
  }
  const keyType = options.keyType ?? CA_PROVIDER_DEFAULTS.keyType
  if (!KEY_TYPES.includes(keyType)) throw invalidOption('keyType', `must be one of ${KEY_TYPES.join(', ')}`)
  const validityDays = positiveNumber('validityDays', options.validityDays, CA_PROVIDER_DEFAULTS.validityDays, MAX_VALIDITY_DAYS, false)
  const cacheSize = positiveNumber('cacheSize', options.cacheSize, CA_PROVIDER_DEFAULTS.cacheSize, 1_000_000, true)
  const keyPoolSize = options.keyPoolSize ?? CA_PROVIDER_DEFAULTS.keyPoolSize[keyType]
  if (!Number.isInteger(keyPoolSize) || keyPoolSize < 0 || keyPoolSize > 1000) throw invalidOption('keyPoolSize', 'must be an integer from 0 to 1000')
  const now = callable('now', options.now) ?? Date.now
  const onLeafIssued = callable('onLeafIssued', options.onLeafIssued)
  const onRenewalError = callable('onRenewalError', options.onRenewalError)
  if (options.passphrase !== undefined && typeof options.passphrase !== 'string' && !Buffer.isBuffer(options.passphrase)) {
    throw invalidOption('passphrase', 'must be a string or Buffer')
  }

  const ca = loadCertificateAuthority(options, now())
  const keys = new LeafKeyPool(keyType, keyPoolSize)
  const lifetimeMs = validityDays * DAY_MS
  const cache = new LeafCache({
    maxEntries: cacheSize,
    now,
    mint: async (host) => {
      const validity = leafValidity(now(), lifetimeMs, ca)
      const leaf = await mintLeaf(ca, host, await keys.take(), validity)
      try {
        onLeafIssued?.(leaf)
      } catch {
        // An observer's failure must not fail the handshake it observes.
      }
      return { leaf, renewAt: validity.renewAt }
    },
    onRenewalError: (host, error) => onRenewalError?.(host, error)
  })

  const getLeaf = async (host: string, signal?: AbortSignal): Promise<ForwardProxyIssuedLeaf> => {
    // Refuse a host no leaf may name before it takes a cache slot.
    const violation = nameConstraintViolation(host, leafName(host), ca.nameConstraints)
    if (violation !== null) throw new ForwardProxyCertificateError('name_not_permitted', `no leaf certificate is issued for host ${host}: ${violation}`)
    return await cache.get(host, signal)
  }
  return {
    getCertificate: async (destination, signal) => (await getLeaf(destination.host, signal)).secureContext,
    getLeaf,
    get cacheSize () {
      return cache.size
    },
    clear: () => cache.clear()
  }
}

function invalidOption (option: string, problem: string): ForwardProxyCertificateError {
  return new ForwardProxyCertificateError('invalid_option', `option "${option}" ${problem}`)
}

function positiveNumber (option: string, value: unknown, fallback: number, max: number, integer: boolean): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > max || (integer && !Number.isInteger(value))) {
    throw invalidOption(option, `must be a positive ${integer ? 'integer' : 'number'} of at most ${max}`)
  }
  return value
}

function callable<F extends (...args: never[]) => unknown> (option: string, value: F | undefined): F | undefined {
  if (value !== undefined && typeof value !== 'function') throw invalidOption(option, 'must be a function')
  return value
}

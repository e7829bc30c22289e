// The certificate provider that enrolls leaves from an EST service: its options, its checks of each
// issued leaf, retries.

import { createSecureContext } from 'node:tls'
import type { X509Certificate } from 'node:crypto'
import type { ForwardProxyIssuedLeaf, ForwardProxyLeafKeyType } from '../../types/certificates'
import type { ForwardProxyEstCertificateProvider, ForwardProxyEstProviderOptions } from '../../types/est'
import { EstClient, certificationRequest, EstTransport, type EstTransportSettings } from './est-client'
import { ForwardProxyEstError } from './errors'
import { LeafCache, type CachedLeaf } from './leaf-cache'
import { generateLeafKeyPair, type LeafKeyPair, leafName } from './leaf'

/**
 * Creates a certificate provider that enrolls leaves from an EST service (RFC 7030),
 * for production, where the CA key stays in a separate service: per host it generates a key (ECDSA P-256 by default), posts
 * a PKCS#10 request carrying the host as subjectAltName to `/.well-known/est/simpleenroll`
 * (HTTP Basic and/or a TLS client certificate, over HTTPS trusting `ca`), waits out 202 +
 * Retry-After within `timeout`, and checks the issued leaf names the host and chains to the
 * `/cacerts` certificates before caching it (bounded LRU, single-flight, renewed before expiry).
 * Pass it as `certificateProvider` of `tlsInterception`.
 *
 * The proxy never holds the CA key. Any failure (service down, slow, refusing, or issuing a
 * wrong-name or untrusted leaf) rejects `getCertificate`, which fails the client's handshake;
 * there is no self-signed fallback. The rejection is a `ForwardProxyEstError`
 * whose message carries the EST status and never a secret.
 * @throws ForwardProxyEstError (`invalid_option`) when an option is invalid.
 */
export function createEstCertificateProvider (options: ForwardProxyEstProviderOptions): ForwardProxyEstCertificateProvider {
  const settings = estSettings(options)
  const transport = new EstTransport(settings.transport)
  const client = new EstClient(transport, settings.now, settings.cacertsMaxAge)
  const cache = new LeafCache({
    maxEntries: settings.cacheSize,
    now: settings.now,
    mint: async (host) => await enroll(settings, client, host),
    onRenewalError: (host, error) => settings.onRenewalError?.(host, error)
  })

  const getLeaf = async (host: string, signal?: AbortSignal): Promise<ForwardProxyIssuedLeaf> => {
    leafName(host) // refuse a host no leaf may name before it takes a cache slot
    return await cache.get(host, signal)
  }
  return {
    getCertificate: async (destination, signal) => (await getLeaf(destination.host, signal)).secureContext,
    getLeaf,
    get cacheSize () {
      return cache.size
    },
    clear: () => {
      cache.clear()
      client.forgetCacerts()
    },
    close: async () => await transport.close()
  }
}

/** One enrollment for `host`, bounded by the timeout whoever waits for it. */
async function enroll (settings: EstSettings, client: EstClient, host: string): Promise<CachedLeaf> {
  const deadline = settings.now() + settings.timeout
  const signal = AbortSignal.timeout(settings.timeout)
  const keyPair = await generateLeafKeyPair(settings.keyType)
  const [csr, cacerts] = await Promise.all([certificationRequest(host, keyPair), client.cacerts(signal)])
  const issued = await client.simpleEnroll(csr, signal, deadline)
  let checked: CheckedLeaf
  try {
    checked = checkIssuedLeaf({ host, spki: keyPair.spki, issued, cacerts, now: settings.now() })
  } catch (error) {
    // The CA may have been rotated since /cacerts was read: read it again, once.
    if (!(error instanceof UnchainedLeafError)) throw error
    const fresh = await client.cacerts(signal, true)
    checked = checkIssuedLeaf({ host, spki: keyPair.spki, issued, cacerts: fresh, now: settings.now() })
  }
  const leaf = issuedLeaf(host, keyPair, checked)
  try {
    settings.onLeafIssued?.(leaf)
  } catch {
    // An observer's failure must not fail the handshake it observes.
  }
  // Renew when a third of the remaining lifetime is left, as the CA-backed provider does.
  const start = Math.max(settings.now(), leaf.notBefore.getTime())
  return { leaf, renewAt: start + Math.floor((leaf.notAfter.getTime() - start) * 2 / 3) }
}

function issuedLeaf (host: string, keyPair: LeafKeyPair, checked: CheckedLeaf): ForwardProxyIssuedLeaf {
  const cert = checked.leaf.toString()
  const chain = checked.chain.map((certificate) => certificate.toString()).join('')
  let secureContext
  try {
    secureContext = createSecureContext({ cert: cert + chain, key: keyPair.privateKeyPem })
  } catch {
    throw new ForwardProxyEstError('est_untrusted_leaf', `EST enrollment for ${host} refused: the issued certificate cannot be used with the proxy's key`)
  }
  return {
    host,
    cert,
    key: keyPair.privateKeyPem,
    chain,
    serialNumber: checked.leaf.serialNumber.toUpperCase(),
    notBefore: new Date(checked.leaf.validFrom),
    notAfter: new Date(checked.leaf.validTo),
    secureContext
  }
}

/** Defaults of `createEstCertificateProvider`. */
export const EST_PROVIDER_DEFAULTS = {
  timeout: 10_000,
  cacertsMaxAge: 3_600_000,
  keyType: 'ecdsa-p256',
  cacheSize: 1000,
  maxResponseBytes: 1_048_576
} as const

const KNOWN_OPTIONS = ['url', 'label', 'username', 'password', 'clientCert', 'clientKey', 'clientKeyPassphrase', 'ca', 'timeout',
  'cacertsMaxAge', 'keyType', 'cacheSize', 'maxResponseBytes', 'now', 'onLeafIssued', 'onRenewalError']
const KEY_TYPES: readonly ForwardProxyLeafKeyType[] = ['ecdsa-p256', 'rsa-2048']
const LABEL = /^[A-Za-z0-9_-]{1,64}$/

/** The checked options of the EST provider. */
interface EstSettings {
  readonly transport: EstTransportSettings
  readonly timeout: number
  readonly cacertsMaxAge: number
  readonly keyType: ForwardProxyLeafKeyType
  readonly cacheSize: number
  readonly now: () => number
  readonly onLeafIssued: ForwardProxyEstProviderOptions['onLeafIssued']
  readonly onRenewalError: ForwardProxyEstProviderOptions['onRenewalError']
}

/**
 * Checks the options of `createEstCertificateProvider`. Messages name the option, never its
 * value when it is a secret.
 * @throws ForwardProxyEstError (`invalid_option`).
 */
function estSettings (options: ForwardProxyEstProviderOptions): EstSettings {
  if (typeof options !== 'object' || options === null) throw invalidOption('options', 'must be an object')
  for (const key of Object.keys(options)) {
    if (!KNOWN_OPTIONS.includes(key)) throw invalidOption(key, `is not a known option (known: ${KNOWN_OPTIONS.join(', ')})`)
  }
  const url = estUrl(options.url)
  if (options.label !== undefined && (typeof options.label !== 'string' || !LABEL.test(options.label))) {
    throw invalidOption('label', 'must be 1 to 64 letters, digits, "-" or "_"')
  }
  const base = `${url.origin}/.well-known/est${options.label === undefined ? '' : `/${options.label}`}`
  const basic = options.username !== undefined || options.password !== undefined
  if (basic && (typeof options.username !== 'string' || typeof options.password !== 'string' || options.username.includes(':'))) {
    throw invalidOption('username', 'and "password" must both be strings (the user name without ":")')
  }
  const certificate = options.clientCert !== undefined || options.clientKey !== undefined
  if (certificate && (!pemLike(options.clientCert) || !pemLike(options.clientKey))) {
    throw invalidOption('clientCert', 'and "clientKey" must both be PEM text (string or Buffer)')
  }
  if (options.clientKeyPassphrase !== undefined && typeof options.clientKeyPassphrase !== 'string') throw invalidOption('clientKeyPassphrase', 'must be a string')
  if (options.ca !== undefined && !pemLike(options.ca) && !(Array.isArray(options.ca) && options.ca.every(pemLike))) {
    throw invalidOption('ca', 'must be PEM text (string or Buffer) or an array of them')
  }
  const keyType = options.keyType ?? EST_PROVIDER_DEFAULTS.keyType
  if (!KEY_TYPES.includes(keyType)) throw invalidOption('keyType', `must be one of ${KEY_TYPES.join(', ')}`)
  return {
    transport: {
      base,
      username: options.username,
      password: options.password,
      clientCert: options.clientCert,
      clientKey: options.clientKey,
      clientKeyPassphrase: options.clientKeyPassphrase,
      ca: options.ca,
      maxResponseBytes: integer('maxResponseBytes', options.maxResponseBytes, EST_PROVIDER_DEFAULTS.maxResponseBytes, 64 * 1_048_576)
    },
    timeout: integer('timeout', options.timeout, EST_PROVIDER_DEFAULTS.timeout, 600_000),
    cacertsMaxAge: integer('cacertsMaxAge', options.cacertsMaxAge, EST_PROVIDER_DEFAULTS.cacertsMaxAge, 31 * 86_400_000),
    keyType,
    cacheSize: integer('cacheSize', options.cacheSize, EST_PROVIDER_DEFAULTS.cacheSize, 1_000_000),
    now: callable('now', options.now) ?? Date.now,
    onLeafIssued: callable('onLeafIssued', options.onLeafIssued),
    onRenewalError: callable('onRenewalError', options.onRenewalError)
  }
}

function estUrl (value: unknown): URL {
  let url: URL
  try {
    url = new URL(value instanceof URL ? value.href : String(value))
  } catch {
    throw invalidOption('url', 'must be an https:// URL of the EST server')
  }
  if (typeof value !== 'string' && !(value instanceof URL)) throw invalidOption('url', 'must be an https:// URL of the EST server')
  if (url.protocol !== 'https:') throw invalidOption('url', 'must use https: (EST runs over TLS, RFC 7030 3.2)')
  if (url.username !== '' || url.password !== '') throw invalidOption('url', 'must not hold credentials: use "username" and "password"')
  if ((url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.hash !== '') {
    throw invalidOption('url', 'must be the server\'s origin only (https://host[:port]); use "label" for a CA label')
  }
  return url
}

function pemLike (value: unknown): boolean {
  return typeof value === 'string' || Buffer.isBuffer(value)
}

function integer (option: string, value: unknown, fallback: number, max: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0 || value > max) {
    throw invalidOption(option, `must be a positive integer of at most ${max}`)
  }
  return value
}

function callable<F extends (...args: never[]) => unknown> (option: string, value: F | undefined): F | undefined {
  if (value !== undefined && typeof value !== 'function') throw invalidOption(option, 'must be a function')
  return value
}

function invalidOption (option: string, problem: string): ForwardProxyEstError {
  return new ForwardProxyEstError('invalid_option', `option "${option}" ${problem}`)
}

const SERVER_AUTH = '1.3.6.1.5.5.7.3.1'
const ANY_EXTENDED_KEY_USAGE = '2.5.29.37.0'
const MAX_CHAIN_LENGTH = 8

/** The leaf does not chain to `/cacerts` (the caller may read `/cacerts` again once: CA rotation). */
class UnchainedLeafError extends ForwardProxyEstError {}

/** An issued leaf that passed every check, and the certificates to send after it. */
interface CheckedLeaf {
  readonly leaf: X509Certificate
  /** Issuing CA first, then each issuer in turn, up to the first self-issued CA (included). */
  readonly chain: readonly X509Certificate[]
}

/** What an issued leaf is checked against. */
interface LeafCheckInput {
  readonly host: string
  /** The DER SubjectPublicKeyInfo of the key the proxy generated for this host. */
  readonly spki: Uint8Array
  /** Certificates of the `/simpleenroll` answer: the leaf, maybe with intermediates. */
  readonly issued: readonly X509Certificate[]
  /** Certificates of the `/cacerts` answer: the only anchors a leaf may chain to. */
  readonly cacerts: readonly X509Certificate[]
  readonly now: number
}

/**
 * Fails closed on anything but a leaf the proxy can present for `host`: the leaf is
 * the certificate for the proxy's own key; its subjectAltName names the host exactly (an
 * iPAddress for IP hosts, a dNSName otherwise; no wildcard, the subject CN is not consulted);
 * it is not a CA, allows server authentication when it restricts usage, and is valid now; and
 * its signatures chain, through CA certificates valid now, to a certificate of `/cacerts`.
 * @throws ForwardProxyEstError (`est_untrusted_leaf`).
 */
function checkIssuedLeaf (input: LeafCheckInput): CheckedLeaf {
  const { host } = input
  const spki = Buffer.from(input.spki)
  const leaf = input.issued.find((certificate) => spki.equals(certificate.publicKey.export({ type: 'spki', format: 'der' })))
  if (leaf === undefined) throw untrusted(host, 'no certificate in the answer is for the key the proxy generated')
  const name = leafName(host)
  const named = name.type === 'ip'
    ? leaf.checkIP(host) !== undefined
    : leaf.checkHost(host, { subject: 'never', wildcards: false, partialWildcards: false }) === host
  if (!named) throw untrusted(host, `the issued certificate does not name the host in its subjectAltName (it has ${leaf.subjectAltName ?? 'none'})`)
  if (leaf.ca) throw untrusted(host, 'the issued certificate is a CA certificate')
  const usages = leaf.keyUsage as string[] | undefined // Node exposes the extended key usage here
  if (usages !== undefined && !usages.includes(SERVER_AUTH) && !usages.includes(ANY_EXTENDED_KEY_USAGE)) {
    throw untrusted(host, 'the issued certificate does not allow TLS server authentication (extendedKeyUsage)')
  }
  if (!validAt(leaf, input.now)) throw untrusted(host, `the issued certificate is not valid now (${leaf.validFrom} to ${leaf.validTo})`)
  return { leaf, chain: chainToCacerts(input, leaf) }
}

function chainToCacerts (input: LeafCheckInput, leaf: X509Certificate): X509Certificate[] {
  const extras = input.issued.filter((certificate) => certificate !== leaf)
  const chain: X509Certificate[] = []
  let current = leaf
  let anchored = false
  for (let depth = 0; depth < MAX_CHAIN_LENGTH; depth++) {
    const fromCacerts = issuerOf(current, input.cacerts, input.now)
    const issuer = fromCacerts ?? (anchored ? undefined : issuerOf(current, extras, input.now))
    if (issuer === undefined || chain.includes(issuer)) break
    anchored ||= fromCacerts !== undefined
    chain.push(issuer)
    if (issuer.checkIssued(issuer)) break // self-issued: the root
    current = issuer
  }
  if (!anchored) {
    throw new UnchainedLeafError('est_untrusted_leaf', `EST enrollment for ${input.host} refused: the issued certificate (issuer ${oneLine(leaf.issuer)}) does not chain to the EST server's /cacerts certificates`)
  }
  return chain
}

function issuerOf (child: X509Certificate, candidates: readonly X509Certificate[], now: number): X509Certificate | undefined {
  return candidates.find((candidate) => candidate.ca && validAt(candidate, now) && child.checkIssued(candidate) && child.verify(candidate.publicKey))
}

function validAt (certificate: X509Certificate, now: number): boolean {
  return Date.parse(certificate.validFrom) <= now && now < Date.parse(certificate.validTo)
}

function oneLine (name: string): string {
  return name.replace(/\n/g, ', ')
}

function untrusted (host: string, problem: string): ForwardProxyEstError {
  return new ForwardProxyEstError('est_untrusted_leaf', `EST enrollment for ${host} refused: ${problem}`)
}

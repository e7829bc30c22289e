import { createSecureContext } from 'node:tls'
import type { ForwardProxyIssuedLeaf } from '../../types/certificates'
import type { ForwardProxyEstCertificateProvider, ForwardProxyEstProviderOptions } from '../../types/est'
import { EstClient } from './est-client'
import { certificationRequest } from './est-csr'
import { ForwardProxyEstError } from './est-error'
import { checkIssuedLeaf, UnchainedLeafError, type CheckedLeaf } from './est-leaf-check'
import { estSettings, type EstSettings } from './est-options'
import { EstTransport } from './est-transport'
import { LeafCache, type CachedLeaf } from './leaf-cache'
import { generateLeafKeyPair, type LeafKeyPair } from './leaf-keys'
import { leafName } from './leaf-name'

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

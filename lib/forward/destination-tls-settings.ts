import { X509Certificate } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls'
import type { ForwardProxyDestinationCertificateCheck, TlsInterceptionOptions } from '../../types/interception'
import { ForwardProxyOptionsError } from '../options'

/**
 * How the proxy validates `https://` destinations:
 * the trust store and the optional operator check. Built once; its secure context is shared by
 * every TLS connection to a destination.
 */
export interface DestinationTlsSettings {
  /** Node's default roots plus any `trustedDestinationCa`. */
  readonly secureContext: SecureContext
  /** The operator's check, or null for the default (only error-free certificates). */
  readonly check: ForwardProxyDestinationCertificateCheck | null
}

/**
 * Validates the destination TLS options of `tlsInterception` and builds their settings.
 * Without `trustedDestinationCa` the trust store is Node's default one; with it, Node's
 * bundled roots, the `NODE_EXTRA_CA_CERTS` file's certificates and those CAs.
 * @throws ForwardProxyOptionsError when a CA is not PEM text or the check is not a function.
 */
export function resolveDestinationTlsSettings (
  options: Pick<TlsInterceptionOptions, 'trustedDestinationCa' | 'checkDestinationCertificate'> = {}
): DestinationTlsSettings {
  const { trustedDestinationCa, checkDestinationCertificate } = options
  if (checkDestinationCertificate !== undefined && typeof checkDestinationCertificate !== 'function') {
    throw new ForwardProxyOptionsError('checkDestinationCertificate', 'must be a function (certificate, error, destination) => boolean')
  }
  return {
    secureContext: trustedDestinationCa === undefined ? createSecureContext() : contextTrusting(trustedDestinationCa),
    check: checkDestinationCertificate ?? null
  }
}

function contextTrusting (trusted: NonNullable<TlsInterceptionOptions['trustedDestinationCa']>): SecureContext {
  const list = (Array.isArray(trusted) ? trusted : [trusted]) as ReadonlyArray<string | Buffer>
  list.forEach((pem, index) => {
    const text = typeof pem === 'string' ? pem : Buffer.isBuffer(pem) ? pem.toString('latin1') : ''
    const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? []
    if (blocks.length === 0) {
      throw new ForwardProxyOptionsError(`trustedDestinationCa[${index}]`, 'must be PEM text (string or Buffer) holding at least one CERTIFICATE block')
    }
    // createSecureContext skips a corrupt `ca` block silently; an operator must hear about it.
    for (const block of blocks) {
      try {
        void new X509Certificate(block)
      } catch {
        throw new ForwardProxyOptionsError(`trustedDestinationCa[${index}]`, 'holds a CERTIFICATE block that cannot be parsed')
      }
    }
  })
  // A `ca` list replaces Node's whole default store (bundled roots and NODE_EXTRA_CA_CERTS,
  // measured on Node 20), so both are listed again first.
  return createSecureContext({ ca: [...rootCertificates, ...extraCaFromEnvironment(), ...list] })
}

/** The certificates of the `NODE_EXTRA_CA_CERTS` file, if any (Node warns itself when it is unreadable). */
function extraCaFromEnvironment (): string[] {
  const path = process.env.NODE_EXTRA_CA_CERTS
  if (path === undefined || path === '') return []
  try {
    return [readFileSync(path, 'latin1')]
  } catch {
    return []
  }
}

/** The default: Node's trust store, only error-free certificates (chain and host name). */
export const DEFAULT_DESTINATION_TLS: DestinationTlsSettings = resolveDestinationTlsSettings()

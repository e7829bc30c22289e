import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls'
import type { ForwardProxyDestinationCertificateCheck, TlsInterceptionOptions } from '../../types/interception'
import { ForwardProxyOptionsError } from '../options'

/**
 * How the proxy validates `https://` destinations (SPEC 2.4 DestinationCertificateValidation):
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
 * Without `trustedDestinationCa` the trust store is Node's default one (so
 * `NODE_EXTRA_CA_CERTS` applies); with it, Node's bundled roots plus those CAs.
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
    if (!text.includes('-----BEGIN CERTIFICATE-----')) {
      throw new ForwardProxyOptionsError(`trustedDestinationCa[${index}]`, 'must be PEM text (string or Buffer) holding at least one CERTIFICATE block')
    }
  })
  try {
    // A `ca` list replaces Node's roots, so the bundled roots are listed first.
    return createSecureContext({ ca: [...rootCertificates, ...list] })
  } catch {
    throw new ForwardProxyOptionsError('trustedDestinationCa', 'holds a certificate that cannot be parsed')
  }
}

/** The default: Node's trust store, only error-free certificates (chain and host name). */
export const DEFAULT_DESTINATION_TLS: DestinationTlsSettings = resolveDestinationTlsSettings()

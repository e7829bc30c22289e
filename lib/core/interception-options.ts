// The options of tlsInterception, checked and resolved, with the defaults: how `https://`
// destinations are validated, the selector, certificate provider, destination filters, client
// protocols and handshake timeout.

import { X509Certificate } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls'
import type {
  ForwardProxyRequestTransform,
  ForwardProxyDestinationCertificateCheck,
  TlsInterceptionOptions,
  ForwardProxyCertificateProviderSource,
  ForwardProxyClientProtocols,
  ForwardProxyPassthroughOnClientRefusal,
  ForwardProxyDestinationFilter,
  ForwardProxyInterceptionSelectorSource
} from '../../types/interception'
import { ForwardProxyOptionsError } from '../protocol/errors'
import { FASTIFY_REGISTER_KEYS, asArray, checkTransform } from './options'

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

/** Default time allowed for the client's TLS handshake: 10 s. */
const DEFAULT_HANDSHAKE_TIMEOUT = 10_000

/** The validated options of `tlsInterception`, defaults filled in. */
export interface InterceptionSettings {
  /** From the options; null means "look for the decorator when the server gets ready". */
  readonly selector: ForwardProxyInterceptionSelectorSource | null
  readonly certificateProvider: ForwardProxyCertificateProviderSource | null
  readonly transforms: readonly ForwardProxyRequestTransform[]
  readonly destinationFilters: readonly ForwardProxyDestinationFilter[]
  readonly clientProtocols: ForwardProxyClientProtocols
  readonly handshakeTimeout: number
  /** Null: off. */
  readonly passthroughOnClientRefusal: Readonly<ForwardProxyPassthroughOnClientRefusal> | null
}

const TLS_INTERCEPTION_KEYS = [
  'selector', 'certificateProvider', 'transforms', 'destinationFilters', 'clientProtocols',
  'handshakeTimeout', 'trustedDestinationCa', 'checkDestinationCertificate', 'passthroughOnClientRefusal'
]

const CLIENT_PROTOCOLS: readonly ForwardProxyClientProtocols[] = ['http1', 'http2', 'http1AndHttp2']

/**
 * Validates the options of `tlsInterception` (all but the destination TLS ones, which the
 * forwarder validates) and fills in defaults. Never mutates `options`.
 * @throws ForwardProxyOptionsError naming the first bad option.
 */
export function resolveInterceptionSettings (options: TlsInterceptionOptions = {}): InterceptionSettings {
  if (typeof options !== 'object' || options === null) throw new ForwardProxyOptionsError('options', 'must be an object')
  for (const key of Object.keys(options)) {
    if (!TLS_INTERCEPTION_KEYS.includes(key) && !FASTIFY_REGISTER_KEYS.has(key)) {
      throw new ForwardProxyOptionsError(key, `is not a known tlsInterception option (known: ${TLS_INTERCEPTION_KEYS.join(', ')})`)
    }
  }
  const clientProtocols = options.clientProtocols ?? 'http1AndHttp2'
  if (!CLIENT_PROTOCOLS.includes(clientProtocols)) {
    throw new ForwardProxyOptionsError('clientProtocols', `must be one of ${CLIENT_PROTOCOLS.join(', ')}: ${String(clientProtocols)}`)
  }
  const handshakeTimeout = options.handshakeTimeout ?? DEFAULT_HANDSHAKE_TIMEOUT
  if (typeof handshakeTimeout !== 'number' || !Number.isInteger(handshakeTimeout) || handshakeTimeout < 1 || handshakeTimeout > 2_147_483_647) {
    throw new ForwardProxyOptionsError('handshakeTimeout', `must be a positive integer of milliseconds no larger than 2147483647: ${String(handshakeTimeout)}`)
  }
  return {
    selector: options.selector === undefined ? null : checkSelectorSource(options.selector, 'selector'),
    certificateProvider: options.certificateProvider === undefined ? null : checkProviderSource(options.certificateProvider, 'certificateProvider'),
    transforms: asArray('transforms', options.transforms ?? []).map((transform, index) => checkTransform(transform, `transforms[${index}]`)),
    destinationFilters: asArray('destinationFilters', options.destinationFilters ?? []).map((filter, index) => checkFilter(filter, `destinationFilters[${index}]`)),
    clientProtocols,
    handshakeTimeout,
    passthroughOnClientRefusal: checkPassthrough(options.passthroughOnClientRefusal)
  }
}

const LONGEST_TIMER_MS = 2_147_483_647

/** Checks `passthroughOnClientRefusal`: absent (off), or `{ after, for }` of positive integers. */
function checkPassthrough (value: unknown): Readonly<ForwardProxyPassthroughOnClientRefusal> | null {
  if (value === undefined) return null
  const option = 'passthroughOnClientRefusal'
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ForwardProxyOptionsError(option, 'must be an object { after, for }')
  const { after, for: duration, ...rest } = value as Record<string, unknown>
  const unknown = Object.keys(rest)[0]
  if (unknown !== undefined) throw new ForwardProxyOptionsError(`${option}.${unknown}`, 'is not a known key (known: after, for)')
  if (typeof after !== 'number' || !Number.isInteger(after) || after < 1 || after > 1000) {
    throw new ForwardProxyOptionsError(`${option}.after`, `must be an integer from 1 to 1000: ${String(after)}`)
  }
  if (typeof duration !== 'number' || !Number.isInteger(duration) || duration < 1 || duration > LONGEST_TIMER_MS) {
    throw new ForwardProxyOptionsError(`${option}.for`, `must be a positive integer of milliseconds no larger than ${LONGEST_TIMER_MS}: ${String(duration)}`)
  }
  return Object.freeze({ after, for: duration })
}

/**
 * Checks a selector given as an option or a decorator: an object with `shouldIntercept`, or a
 * factory `(request) => selector`.
 * @throws ForwardProxyOptionsError naming `option` otherwise.
 */
export function checkSelectorSource (source: unknown, option: string): ForwardProxyInterceptionSelectorSource {
  if (typeof source === 'function') return source as ForwardProxyInterceptionSelectorSource
  if (typeof source !== 'object' || source === null || typeof (source as Record<string, unknown>).shouldIntercept !== 'function') {
    throw new ForwardProxyOptionsError(option, 'must be an object with a shouldIntercept(request, destination, signal) function, or a function (request) => such an object')
  }
  return source as ForwardProxyInterceptionSelectorSource
}

/**
 * Checks a certificate provider given as an option or a decorator: an object with
 * `getCertificate`, or a factory `(request) => provider`.
 * @throws ForwardProxyOptionsError naming `option` otherwise.
 */
export function checkProviderSource (source: unknown, option: string): ForwardProxyCertificateProviderSource {
  if (typeof source === 'function') return source as ForwardProxyCertificateProviderSource
  if (typeof source !== 'object' || source === null || typeof (source as Record<string, unknown>).getCertificate !== 'function') {
    throw new ForwardProxyOptionsError(option, 'must be an object with a getCertificate(destination, signal) function, or a function (request) => such an object')
  }
  return source as ForwardProxyCertificateProviderSource
}

function checkFilter (filter: unknown, option: string): ForwardProxyDestinationFilter {
  if (typeof filter !== 'object' || filter === null || typeof (filter as Record<string, unknown>).allowTunnel !== 'function') {
    throw new ForwardProxyOptionsError(option, 'must be an object with an allowTunnel(request, destination, signal) function')
  }
  return filter as ForwardProxyDestinationFilter
}

import type {
  ForwardProxyCertificateProviderSource,
  ForwardProxyClientProtocols,
  ForwardProxyDestinationFilter,
  ForwardProxyInterceptionSelectorSource,
  ForwardProxyRequestTransform,
  TlsInterceptionOptions
} from '../../types/interception'
import { ForwardProxyOptionsError, checkTransform } from '../options'

/** Default time allowed for the client's TLS handshake: 10 s. */
export const DEFAULT_HANDSHAKE_TIMEOUT = 10_000

/** The validated options of `tlsInterception`, defaults filled in. */
export interface InterceptionSettings {
  /** From the options; null means "look for the decorator when the server gets ready". */
  readonly selector: ForwardProxyInterceptionSelectorSource | null
  readonly certificateProvider: ForwardProxyCertificateProviderSource | null
  readonly transforms: readonly ForwardProxyRequestTransform[]
  readonly destinationFilters: readonly ForwardProxyDestinationFilter[]
  readonly clientProtocols: ForwardProxyClientProtocols
  readonly handshakeTimeout: number
}

const KNOWN_KEYS = [
  'selector', 'certificateProvider', 'transforms', 'destinationFilters', 'clientProtocols',
  'handshakeTimeout', 'trustedDestinationCa', 'checkDestinationCertificate'
]

// Fastify passes its own keys (prefix, logLevel, ...) to every plugin; they are not ours to judge.
const FASTIFY_REGISTER_KEYS = new Set(['prefix', 'logLevel', 'logSerializers'])

const CLIENT_PROTOCOLS: readonly ForwardProxyClientProtocols[] = ['http1', 'http2', 'http1AndHttp2']

/**
 * Validates the options of `tlsInterception` (all but the destination TLS ones, which the
 * forwarder validates) and fills in defaults. Never mutates `options`.
 * @throws ForwardProxyOptionsError naming the first bad option.
 */
export function resolveInterceptionSettings (options: TlsInterceptionOptions = {}): InterceptionSettings {
  if (typeof options !== 'object' || options === null) throw new ForwardProxyOptionsError('options', 'must be an object')
  for (const key of Object.keys(options)) {
    if (!KNOWN_KEYS.includes(key) && !FASTIFY_REGISTER_KEYS.has(key)) {
      throw new ForwardProxyOptionsError(key, `is not a known tlsInterception option (known: ${KNOWN_KEYS.join(', ')})`)
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
    transforms: asArray(options.transforms ?? [], 'transforms').map((transform, index) => checkTransform(transform, `transforms[${index}]`)),
    destinationFilters: asArray(options.destinationFilters ?? [], 'destinationFilters').map((filter, index) => checkFilter(filter, `destinationFilters[${index}]`)),
    clientProtocols,
    handshakeTimeout
  }
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

function asArray (value: unknown, option: string): unknown[] {
  if (!Array.isArray(value)) throw new ForwardProxyOptionsError(option, 'must be an array')
  return value
}

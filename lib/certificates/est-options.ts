import type { ForwardProxyLeafKeyType } from '../../types/certificates'
import type { ForwardProxyEstProviderOptions } from '../../types/est'
import { ForwardProxyEstError } from './est-error'
import type { EstTransportSettings } from './est-transport'

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
export interface EstSettings {
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
export function estSettings (options: ForwardProxyEstProviderOptions): EstSettings {
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

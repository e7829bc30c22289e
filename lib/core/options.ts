// Every option of forwardProxy, checked and resolved, with the defaults: limits, authentication,
// destinations, users, secrets, upstream proxies, transforms (tlsInterception's are in
// ./interception-options).

import type {
  ForwardProxyAuthOptions,
  ForwardProxyLimitOptions,
  ForwardProxyOptions,
  ForwardProxyResolver
} from '../../types/options'
import type { ForwardProxyCredentialCheck } from '../../types/user'
import type { ForwardProxyRequestTransform } from '../../types/interception'
import { parseDialedCidr, compileHostPattern, type HostPattern } from '../protocol/hosts'
import { DEFAULT_AUTH_FAILURE_LIMIT, type AuthFailureLimitSettings } from '../security/proxy-auth'
import { credentialCheckFromUsers } from '../security/users-table'
import { systemResolver, type DestinationPolicySettings } from '../security/destination-policy'
import type { SecretSet } from '../security/secrets'
import { compileSecrets } from '../security/secret-options'
import { checkUserPolicyFields } from '../security/user-policy'
import { isPolicyMode, POLICY_MODE_PROBLEM } from '../security/report-mode'
import { compileUpstreamProxies, type UpstreamRoutes } from '../security/upstream-proxy'
import { ForwardProxyOptionsError } from '../protocol/errors'
import { DEFAULT_PSEUDONYM } from '../protocol/error-responses'
import { changedRedisSetting, resolveRedisOptions, type ResolvedRedisSettings } from './shared-limits-options'
import { resolveCaptureSettings } from './capture-options'
import type { CaptureSettings } from '../capture/capture-settings'

/** Default limits, in milliseconds where they are durations. */
export const DEFAULT_LIMITS = {
  maxConcurrentTunnels: 10_000,
  tunnelIdleTimeout: 300_000,
  httpActivityTimeout: 100_000,
  connectTimeout: 10_000,
  firstByteTimeout: 10_000,
  maxConcurrentRequests: 10_000,
  maxStreamResets: 100,
  tunnelSetupWait: 100
} as const

// Every limit but tunnelSetupWait is at least 1.
const { tunnelSetupWait: _, ...POSITIVE_LIMIT_DEFAULTS } = DEFAULT_LIMITS

/** The longest `limits.tunnelSetupWait` may be, in milliseconds. */
const MAX_TUNNEL_SETUP_WAIT = 60_000

/** The validated options every part of the proxy reads. */
export interface ResolvedProxySettings {
  readonly pseudonym: string
  readonly auth: {
    readonly realm: string
    readonly check: ForwardProxyCredentialCheck
    /** Brute-force guard; null when `auth.failureLimit` is `false`. */
    readonly failureLimit: AuthFailureLimitSettings | null
  } | null
  readonly destinations: DestinationPolicySettings
  readonly limits: Readonly<Required<ForwardProxyLimitOptions>>
  readonly resolver: ForwardProxyResolver
  readonly transforms: readonly ForwardProxyRequestTransform[]
  /** The `secrets` option compiled; null without secrets. */
  readonly secrets: SecretSet | null
  /** The `upstreamProxies` option compiled; null: every destination is reached directly. */
  readonly upstreams: UpstreamRoutes | null
  readonly propagateTraceContext: boolean
  /** The `redis` option: where the limits shared between processes are counted; null: in each process. */
  readonly redis: ResolvedRedisSettings | null
  /** The `capture` option; null: nothing is recorded. */
  readonly capture: CaptureSettings | null
}

const KNOWN_KEYS: Record<string, readonly string[]> = {
  '': ['auth', 'destinations', 'limits', 'via', 'resolver', 'transforms', 'secrets', 'upstreamProxies', 'propagateTraceContext', 'redis', 'capture'],
  auth: ['realm', 'users', 'validate', 'failureLimit'],
  'auth.failureLimit': ['maxFailures', 'window'],
  destinations: ['allowedHosts', 'deniedHosts', 'allowedPorts', 'allowPrivateNetworks', 'allowedNetworks', 'mode'],
  limits: ['maxConcurrentTunnels', 'tunnelIdleTimeout', 'httpActivityTimeout', 'connectTimeout', 'firstByteTimeout', 'maxConcurrentRequests', 'maxStreamResets', 'tunnelSetupWait']
}

const USER_ENTRY_KEYS: readonly string[] = ['password', 'allowedHosts', 'secrets', 'maxConcurrentTunnels', 'requestsPerMinute', 'mode']

// Fastify passes its own keys (prefix, logLevel, ...) to every plugin; they are not ours to judge.
export const FASTIFY_REGISTER_KEYS = new Set(['prefix', 'logLevel', 'logSerializers'])

/**
 * Validates `forwardProxy` options and fills in defaults. Never mutates `options`.
 * @throws ForwardProxyOptionsError naming the first bad option.
 */
export function resolveProxySettings (options: ForwardProxyOptions = {}): ResolvedProxySettings {
  if (typeof options !== 'object' || options === null) throw new ForwardProxyOptionsError('options', 'must be an object')
  rejectUnknownKeys('', options)
  const secrets = compileSecrets(options.secrets)
  return {
    pseudonym: resolvePseudonym(options.via),
    auth: resolveAuth(options.auth, secrets?.names ?? []),
    destinations: resolveDestinations(options.destinations),
    limits: resolveLimits(options.limits),
    resolver: resolveResolver(options.resolver),
    transforms: asArray('transforms', options.transforms ?? []).map((transform, index) => checkTransform(transform, `transforms[${index}]`)),
    secrets,
    upstreams: compileUpstreamProxies(options.upstreamProxies),
    propagateTraceContext: resolvePropagateTraceContext(options.propagateTraceContext),
    redis: resolveRedisOptions(options.redis),
    capture: resolveCaptureSettings(options.capture)
  }
}

/**
 * The first setting fixed at registration that differs between `current` and `next` (its
 * option name), or null: those are built into the listeners, the route's authentication and
 * the dispatchers when the plugin registers.
 */
export function changedRegistrationOnlySetting (current: ResolvedProxySettings, next: ResolvedProxySettings): string | null {
  if (current.pseudonym !== next.pseudonym) return 'via'
  if ((current.auth === null) !== (next.auth === null)) return 'auth'
  if (current.auth !== null && next.auth !== null) {
    if (current.auth.realm !== next.auth.realm) return 'auth.realm'
    const [a, b] = [current.auth.failureLimit, next.auth.failureLimit]
    if ((a === null) !== (b === null) || (a !== null && b !== null && (a.maxFailures !== b.maxFailures || a.window !== b.window))) return 'auth.failureLimit'
  }
  for (const key of ['httpActivityTimeout', 'firstByteTimeout', 'maxStreamResets'] as const) {
    if (current.limits[key] !== next.limits[key]) return `limits.${key}`
  }
  return changedRedisSetting(current.redis, next.redis)
}

/**
 * Checks that `transform` has a `transformRequest` and/or `transformResponse` function.
 * @throws ForwardProxyOptionsError naming `option` otherwise.
 */
export function checkTransform (transform: unknown, option: string): ForwardProxyRequestTransform {
  if (typeof transform !== 'object' || transform === null) {
    throw new ForwardProxyOptionsError(option, 'must be an object with transformRequest and/or transformResponse functions')
  }
  const { transformRequest, transformResponse, appliesTo } = transform as Record<string, unknown>
  for (const [name, member] of [['transformRequest', transformRequest], ['transformResponse', transformResponse], ['appliesTo', appliesTo]] as const) {
    if (member !== undefined && typeof member !== 'function') throw new ForwardProxyOptionsError(`${option}.${name}`, 'must be a function')
  }
  if (transformRequest === undefined && transformResponse === undefined) {
    throw new ForwardProxyOptionsError(option, 'needs a transformRequest or transformResponse function')
  }
  return transform as ForwardProxyRequestTransform
}

function rejectUnknownKeys (path: string, value: object): void {
  const known = KNOWN_KEYS[path] ?? []
  for (const key of Object.keys(value)) {
    if (path === '' && FASTIFY_REGISTER_KEYS.has(key)) continue
    if (!known.includes(key)) {
      throw new ForwardProxyOptionsError(path === '' ? key : `${path}.${key}`, `is not a known option (known: ${known.join(', ')})`)
    }
  }
}

function resolvePseudonym (via: unknown): string {
  if (via === undefined) return DEFAULT_PSEUDONYM
  if (typeof via !== 'string' || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/.test(via)) {
    throw new ForwardProxyOptionsError('via', 'must be an HTTP token of 1 to 64 characters (letters, digits, - . _ ~ and the like)')
  }
  return via
}

function resolveAuth (auth: ForwardProxyOptions['auth'], secretNames: readonly string[]): ResolvedProxySettings['auth'] {
  if (auth === undefined) return null
  if (typeof auth !== 'object' || auth === null) throw new ForwardProxyOptionsError('auth', 'must be an object')
  rejectUnknownKeys('auth', auth)
  const realm = auth.realm ?? DEFAULT_PSEUDONYM
  // eslint-disable-next-line no-control-regex
  if (typeof realm !== 'string' || realm === '' || /["\\\u0000-\u001f\u007f]/.test(realm)) {
    throw new ForwardProxyOptionsError('auth.realm', 'must be a non-empty string without quotes, backslashes or control characters')
  }
  if ((auth.users === undefined) === (auth.validate === undefined)) {
    throw new ForwardProxyOptionsError('auth', 'needs exactly one of "users" or "validate"')
  }
  if (auth.validate !== undefined) {
    if (typeof auth.validate !== 'function') throw new ForwardProxyOptionsError('auth.validate', 'must be a function (username, password, request) => boolean | user')
    return { realm, check: auth.validate, failureLimit: resolveFailureLimit(auth.failureLimit) }
  }
  const users = auth.users
  if (typeof users !== 'object' || users === null || Array.isArray(users)) {
    throw new ForwardProxyOptionsError('auth.users', 'must be an object mapping user names to passwords')
  }
  for (const [name, entry] of Object.entries(users)) {
    // eslint-disable-next-line no-control-regex
    if (name === '' || name.includes(':') || /[\u0000-\u001f\u007f]/.test(name)) {
      throw new ForwardProxyOptionsError(`auth.users.${name}`, 'is not a valid user name (non-empty, no colon, no control characters)')
    }
    const password: unknown = typeof entry === 'object' && entry !== null ? entry.password : entry
    if (typeof password !== 'string' || password === '') {
      throw new ForwardProxyOptionsError(`auth.users.${name}`, 'must have a non-empty string password')
    }
    if (typeof entry === 'object') {
      const unknownKey = Object.keys(entry).find((key) => !USER_ENTRY_KEYS.includes(key))
      if (unknownKey !== undefined) throw new ForwardProxyOptionsError(`auth.users.${name}.${unknownKey}`, `is not a known option (known: ${USER_ENTRY_KEYS.join(', ')})`)
      checkUserPolicyFields(entry as unknown as Record<string, unknown>, `auth.users.${name}`, secretNames)
    }
  }
  return { realm, check: credentialCheckFromUsers({ ...users }), failureLimit: resolveFailureLimit(auth.failureLimit) }
}

function resolveFailureLimit (limit: ForwardProxyAuthOptions['failureLimit']): AuthFailureLimitSettings | null {
  if (limit === false) return null
  if (limit !== undefined && (typeof limit !== 'object' || limit === null)) throw new ForwardProxyOptionsError('auth.failureLimit', 'must be false or an object { maxFailures, window }')
  return positiveIntegers('auth.failureLimit', DEFAULT_AUTH_FAILURE_LIMIT, limit, new Set(['maxFailures']))
}

function resolveDestinations (destinations: ForwardProxyOptions['destinations']): DestinationPolicySettings {
  const value = destinations ?? {}
  if (typeof value !== 'object' || value === null) throw new ForwardProxyOptionsError('destinations', 'must be an object')
  rejectUnknownKeys('destinations', value)
  const allowPrivateNetworks = value.allowPrivateNetworks ?? false
  if (typeof allowPrivateNetworks !== 'boolean') throw new ForwardProxyOptionsError('destinations.allowPrivateNetworks', 'must be a boolean')
  if (!isPolicyMode(value.mode)) throw new ForwardProxyOptionsError('destinations.mode', POLICY_MODE_PROBLEM)
  return {
    allowedHosts: compilePatterns('destinations.allowedHosts', value.allowedHosts ?? ['*']),
    deniedHosts: compilePatterns('destinations.deniedHosts', value.deniedHosts ?? []),
    allowedPorts: resolvePorts(value.allowedPorts ?? [80, 443]),
    allowPrivateNetworks,
    allowedNetworks: (asArray('destinations.allowedNetworks', value.allowedNetworks ?? [])).map((text, index) => {
      const range = typeof text === 'string' ? parseDialedCidr(text) : null
      if (range === null) throw new ForwardProxyOptionsError(`destinations.allowedNetworks[${index}]`, `is not a CIDR range or IP address: ${String(text)}`)
      return range
    }),
    reportHosts: value.mode === 'report'
  }
}

function compilePatterns (option: string, patterns: unknown): HostPattern[] {
  return asArray(option, patterns).map((text, index) => {
    const pattern = typeof text === 'string' ? compileHostPattern(text) : null
    if (pattern === null) throw new ForwardProxyOptionsError(`${option}[${index}]`, `is not a host pattern (example.com, *.example.com, *, an IP literal or a CIDR range): ${String(text)}`)
    return pattern
  })
}

function resolvePorts (ports: unknown): ReadonlySet<number> | null {
  if (ports === '*') return null
  return new Set(asArray('destinations.allowedPorts', ports).map((port, index) => {
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) {
      throw new ForwardProxyOptionsError(`destinations.allowedPorts[${index}]`, `must be a port number from 1 to 65535: ${String(port)}`)
    }
    return port
  }))
}

/** `value` when it is an array. @throws ForwardProxyOptionsError naming `option` otherwise. */
export function asArray (option: string, value: unknown): unknown[] {
  if (!Array.isArray(value)) throw new ForwardProxyOptionsError(option, 'must be an array')
  return value
}

function resolveLimits (limits: ForwardProxyOptions['limits']): ResolvedProxySettings['limits'] {
  if (limits !== undefined && (typeof limits !== 'object' || limits === null)) throw new ForwardProxyOptionsError('limits', 'must be an object')
  const { tunnelSetupWait = DEFAULT_LIMITS.tunnelSetupWait, ...others } = limits ?? {}
  if (typeof tunnelSetupWait !== 'number' || !Number.isInteger(tunnelSetupWait) || tunnelSetupWait < 0 || tunnelSetupWait > MAX_TUNNEL_SETUP_WAIT) {
    throw new ForwardProxyOptionsError('limits.tunnelSetupWait', `must be an integer of milliseconds from 0 (no wait) to ${MAX_TUNNEL_SETUP_WAIT}: ${String(tunnelSetupWait)}`)
  }
  const positive = positiveIntegers('limits', POSITIVE_LIMIT_DEFAULTS, others, new Set(['maxConcurrentTunnels', 'maxConcurrentRequests', 'maxStreamResets']))
  return { ...positive, tunnelSetupWait }
}

/** Fills `defaults` in `value` and checks every entry is an integer from 1 to 2^31 - 1 (milliseconds unless a count). */
function positiveIntegers<T extends object> (path: string, defaults: T, value: object | undefined, counts: ReadonlySet<string>): T {
  rejectUnknownKeys(path, value ?? {})
  const resolved = { ...defaults, ...value }
  for (const [name, number] of Object.entries(resolved)) {
    if (typeof number !== 'number' || !Number.isInteger(number) || number < 1 || number > 2_147_483_647) {
      throw new ForwardProxyOptionsError(`${path}.${name}`, `must be a positive integer${counts.has(name) ? '' : ' of milliseconds'} no larger than 2147483647: ${String(number)}`)
    }
  }
  return resolved
}

function resolveResolver (resolver: unknown): ForwardProxyResolver {
  if (resolver === undefined) return systemResolver
  if (typeof resolver !== 'function') throw new ForwardProxyOptionsError('resolver', 'must be a function (hostname, signal) => Promise<{ address, family }[]>')
  return resolver as ForwardProxyResolver
}

function resolvePropagateTraceContext (value: unknown): boolean {
  if (value === undefined) return true
  if (typeof value !== 'boolean') throw new ForwardProxyOptionsError('propagateTraceContext', 'must be a boolean')
  return value
}

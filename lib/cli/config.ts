// The configuration file: parsed, checked against the schema and resolved (the files it names
// are read by config-files.ts).

import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { dirname, resolve } from 'node:path'
import type { ValidateFunction } from 'ajv'
import { validate as generatedValidate } from './config-validator.generated'
import { checkCaptureConfig, checkCaptureFolder, type CaptureConfig } from './capture-config'
import type { ForwardProxyHeaderRule } from '../../types/header-rules'
import type { ForwardProxyClientProtocols } from '../../types/interception'
import type { ForwardProxyUserEntry } from '../../types/user'
import type { ForwardProxyLimitOptions, ForwardProxyPolicyMode } from '../../types/options'
import { createHeaderRulesTransform } from '../forward/header-rules'
import { createHostListSelector } from '../interception/host-list-selector'
import { ForwardProxyRuleError } from '../protocol/errors'
import { canonicalHost, compileHostPattern, parseDialedCidr, type HostPattern } from '../protocol/hosts'
import { splitSecretHost } from '../security/secret-options'
import type { ReleaseIdleMemory } from './idle-memory'
import type { LogConfig } from './logging'
import { checkRedisConfig, type RedisConfig } from './redis-config'
import { jsonSyntaxError } from './json-syntax-error'
import { ConfigError, describeSchemaError } from './config-errors'

/** One listener of the configuration file; TLS paths already resolved against the file's folder. */
export interface ListenerConfig {
  host: string
  port: number
  tls?: { cert: string, key: string }
  /** HTTP/2 as well as HTTP/1.1 (ALPN `h2` and `http/1.1`); only on a listener with `tls`. */
  http2?: boolean
}

/** The configuration file, validated, with defaults applied. */
export interface ProxyServerConfig {
  listen: ListenerConfig[]
  /** Accept clients without credentials on a non-loopback listener (an open proxy to whoever reaches it). */
  allowAnonymous?: boolean
  /** User name to password, or to the password and the user's own policy. */
  users?: Record<string, string | ForwardProxyUserEntry>
  /** Brute-force guard of `users` (the plugin's `auth.failureLimit`). */
  authFailureLimit?: { maxFailures?: number, window?: number } | false
  destinations?: {
    allowedHosts?: string[]
    deniedHosts?: string[]
    allowedPorts?: number[] | '*'
    allowPrivateNetworks?: boolean
    allowedNetworks?: string[]
    /** `report`: `allowedHosts` and `deniedHosts` log what they would refuse instead of refusing it. */
    mode?: ForwardProxyPolicyMode
  }
  limits?: ForwardProxyLimitOptions
  interception?: InterceptionConfig
  headers?: ForwardProxyHeaderRule[]
  /** Named credentials for header rules (`{{secret:NAME}}`); `file` paths resolved against the file's folder. */
  secrets?: Record<string, SecretConfig>
  /** Where users' rates, tunnel slots and the authentication lockout are counted for every replica. */
  redis?: RedisConfig
  dataDirectory: string
  /** Processes that share the listeners (Node `cluster`); 1, the default, runs in this process. */
  workers?: number
  /**
   * When each process gives V8's unused heap back to the system: after start-up (`"start"`, the
   * default), also once quiet after traffic (`true`, or the quiet time in milliseconds), or never
   * (`false`).
   */
  releaseIdleMemory?: ReleaseIdleMemory
  log: LogConfig
  /** The Prometheus endpoint's listener; absent means no endpoint. */
  metrics?: MetricsListenerConfig
  /** The plugin's `propagateTraceContext`. */
  propagateTraceContext?: boolean
  /** The plugin's `via`: this proxy's pseudonym in `Via` and in loop detection. */
  via?: string
  /** The plugin's `upstreamProxies`; `ca` paths resolved against the file's folder. */
  upstreamProxies?: 'environment' | UpstreamProxyConfig[]
  /** The plugin's `capture`, with its `file` (required here) resolved against the file's folder. */
  capture?: CaptureConfig
}

/** One rule of the `upstreamProxies` key. */
interface UpstreamProxyConfig {
  hosts: string[]
  /** `direct`, `http://[user:password@]host:port` or `https://...`; the credentials are never printed. */
  url: string
  /** A PEM file of CA certificates trusted for an `https://` upstream. */
  ca?: string
}

/** The `interception` key: which hosts are intercepted and how; paths resolved against the file's folder. */
export interface InterceptionConfig {
  /** Host patterns to intercept, beside the hosts of `secrets`; empty when the file left it out (secrets only). */
  hosts: string[]
  /** The operator CA that signs the leaves presented to clients (PEM files). */
  ca?: { cert: string, key: string }
  /** The EST service (RFC 7030) that issues the leaves instead; never together with `ca`. */
  est?: EstConfig
  /** Extra CA certificates (a PEM file) trusted for destinations, beside Node's default roots. */
  trustedDestinationCa?: string
  clientProtocols?: ForwardProxyClientProtocols
  handshakeTimeout?: number
  /** Off when absent: see TlsInterceptionOptions.passthroughOnClientRefusal. */
  passthroughOnClientRefusal?: { after: number, for: number }
}

/** The `interception.est` key; file paths resolved against the configuration file's folder. */
export interface EstConfig {
  /** The EST server's origin, `https://host[:port]`. */
  url: string
  /** CA label (RFC 7030 3.2.2): endpoints under `/.well-known/est/<label>/`. */
  label?: string
  /** HTTP Basic user name toward the EST server; given with `password`. */
  username?: string
  /** HTTP Basic password; never logged nor shown in messages. */
  password?: string
  /** Client certificate (PEM file) for TLS client authentication; given with `clientKey`. */
  clientCert?: string
  /** Private key (PEM file) of `clientCert`. */
  clientKey?: string
  /** CA certificates (PEM file) trusted for the EST server's TLS certificate instead of Node's roots. */
  ca?: string
  /** Time allowed for one enrollment, in milliseconds. */
  timeout?: number
}

/** The built-in configuration: HTTP/1.1 on 127.0.0.1:8080, no auth, strict policy. */
export const DEFAULT_LISTENER: ListenerConfig = { host: '127.0.0.1', port: 8080 }

// ./config-schema's validator, compiled ahead of time (scripts/generate-config-validator.ts).
const validate = generatedValidate as ValidateFunction

/**
 * Validates a parsed configuration object against the schema and applies defaults.
 * `source` names the file in messages; `baseDirectory` anchors relative paths.
 * @throws ConfigError naming the bad key and what was expected.
 */
export function parseConfig (value: unknown, source: string, baseDirectory: string): ProxyServerConfig {
  if (!validate(value)) {
    throw new ConfigError(`${source}: ${describeSchemaError(validate.errors ?? [])}`)
  }
  const config = withInterceptionHosts(value as Partial<ProxyServerConfig>, source)
  requireTlsForHttp2(config.listen ?? [], source)
  requireOneLeafSource(config.interception, source)
  checkRules(config, source)
  checkSecretReferences(config.headers, config.secrets, source)
  if (Object.keys(config.secrets ?? {}).length > 0 && config.interception === undefined) {
    throw new ConfigError(`${source}: /secrets: secrets are sent inside intercepted tunnels only: add the "interception" key (its CA signs the certificates for the secrets' hosts, which are intercepted whatever its "hosts" list)`)
  }
  checkNetworks(config, source)
  checkCaptureConfig(config.capture, config.users, source)
  const { interception, secrets, capture } = config
  return {
    ...config,
    listen: (config.listen ?? [DEFAULT_LISTENER]).map((listener) => ({
      host: listener.host ?? DEFAULT_LISTENER.host,
      port: listener.port,
      ...(listener.tls === undefined ? {} : { tls: { cert: resolve(baseDirectory, listener.tls.cert), key: resolve(baseDirectory, listener.tls.key) } }),
      ...(listener.http2 === true ? { http2: true } : {})
    })),
    ...(interception === undefined
      ? {}
      : {
          interception: {
            ...interception,
            ...(interception.ca === undefined
              ? {}
              : { ca: { cert: resolve(baseDirectory, interception.ca.cert), key: resolve(baseDirectory, interception.ca.key) } }),
            ...(interception.est === undefined ? {} : { est: resolveEstPaths(interception.est, baseDirectory) }),
            ...(interception.trustedDestinationCa === undefined ? {} : { trustedDestinationCa: resolve(baseDirectory, interception.trustedDestinationCa) })
          }
        }),
    ...(Array.isArray(config.upstreamProxies)
      ? { upstreamProxies: config.upstreamProxies.map((rule) => rule.ca === undefined ? rule : { ...rule, ca: resolve(baseDirectory, rule.ca) }) }
      : {}),
    ...(secrets === undefined
      ? {}
      : {
          secrets: Object.fromEntries(Object.entries(secrets).map(([name, secret]) => [
            name,
            secret.file === undefined ? secret : { ...secret, file: resolve(baseDirectory, secret.file) }
          ]))
        }),
    ...(config.redis === undefined ? {} : { redis: checkRedisConfig(config.redis, source, baseDirectory) }),
    ...(capture === undefined ? {} : { capture: { ...capture, file: resolve(baseDirectory, capture.file) } }),
    dataDirectory: resolve(baseDirectory, config.dataDirectory ?? '.forward-proxy'),
    workers: config.workers ?? 1,
    log: { level: config.log?.level ?? 'info', format: config.log?.format ?? 'json' },
    ...(config.metrics === undefined ? {} : { metrics: { ...DEFAULT_METRICS_LISTENER, ...config.metrics } })
  }
}

function resolveEstPaths (est: EstConfig, baseDirectory: string): EstConfig {
  return {
    ...est,
    ...(est.clientCert === undefined ? {} : { clientCert: resolve(baseDirectory, est.clientCert) }),
    ...(est.clientKey === undefined ? {} : { clientKey: resolve(baseDirectory, est.clientKey) }),
    ...(est.ca === undefined ? {} : { ca: resolve(baseDirectory, est.ca) })
  }
}

/**
 * `interception.hosts` may be left out when `secrets` are configured: their hosts are
 * intercepted whatever the list, so none beside them is meant. Without secrets nothing would be
 * intercepted, which is a mistake rather than a wish.
 * @throws ConfigError when `interception` has no `hosts` and there are no secrets.
 */
function withInterceptionHosts (config: Partial<ProxyServerConfig>, source: string): Partial<ProxyServerConfig> {
  const { interception } = config
  if (interception === undefined || (interception as Partial<InterceptionConfig>).hosts !== undefined) return config
  if (Object.keys(config.secrets ?? {}).length === 0) {
    throw new ConfigError(`${source}: /interception: missing required key "hosts" (the hosts to intercept; it may be left out when "secrets" name the hosts)`)
  }
  return { ...config, interception: { ...interception, hosts: [] } }
}

/**
 * One source of leaves: an operator CA (`ca`) or an EST service (`est`), or neither (the
 * development CA). Both at once is refused rather than one silently winning.
 */
function requireOneLeafSource (interception: InterceptionConfig | undefined, source: string): void {
  if (interception?.ca !== undefined && interception.est !== undefined) {
    throw new ConfigError(`${source}: /interception: give either "ca" (leaves signed by a local CA key) or "est" (leaves enrolled from an EST service), not both`)
  }
}

/**
 * HTTP/2 CONNECT needs TLS with ALPN `h2`; a plain-text listener serves HTTP/1.1
 * only, so `http2: true` without `tls` is refused rather than silently ignored.
 */
function requireTlsForHttp2 (listen: readonly ListenerConfig[], source: string): void {
  listen.forEach((listener, index) => {
    if (listener.http2 === true && listener.tls === undefined) {
      throw new ConfigError(`${source}: /listen/${index}/http2: HTTP/2 needs TLS: add "tls" to this listener (a plain-text listener serves HTTP/1.1 only)`)
    }
  })
}

/**
 * Host patterns and header rules are checked by the built-ins that will run them, so the file
 * is refused for exactly what they would refuse (a bad pattern, a header the proxy manages).
 */
function checkRules (config: Partial<ProxyServerConfig>, source: string): void {
  try {
    if (config.interception !== undefined) createHostListSelector(config.interception.hosts)
    if (config.headers !== undefined) createHeaderRulesTransform(config.headers)
  } catch (error) {
    if (!(error instanceof ForwardProxyRuleError)) throw error
    throw new ConfigError(`${source}: ${error.message.replace(/^fastify-forward-proxy: /, '')}`)
  }
}

/** Every `allowedNetworks` entry parses as a CIDR range, named by its JSON Pointer like the schema's errors. */
function checkNetworks (config: Partial<ProxyServerConfig>, source: string): void {
  config.destinations?.allowedNetworks?.forEach((text, index) => {
    if (parseDialedCidr(text) === null) {
      throw new ConfigError(`${source}: /destinations/allowedNetworks/${index} must be a CIDR range or an IP address, e.g. "10.1.0.0/16" (got ${JSON.stringify(text)})`)
    }
  })
}

/**
 * Reads and validates a configuration file.
 * @throws ConfigError when the file cannot be read, is not JSON, or breaks the schema.
 */
export function loadConfigFile (path: string): ProxyServerConfig {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new ConfigError(`${path}: cannot read the configuration file (${(error as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    // Not JSON.parse's message: it quotes the text around the error, perhaps a password.
    const error = jsonSyntaxError(text)
    throw new ConfigError(`${path}: not valid JSON${error === null ? '' : `: line ${error.line}, column ${error.column}: ${error.problem}`}`)
  }
  const config = parseConfig(value, path, dirname(resolve(path)))
  if (config.capture !== undefined) checkCaptureFolder(config.capture.file, path)
  return config
}

/** One entry of the `secrets` key: where its value comes from and where it may go. */
export interface SecretConfig {
  /** The environment variable holding the value; exactly one of `env` and `file`. */
  env?: string
  /** The file holding the value (resolved against the configuration file's folder). */
  file?: string
  /** Host patterns the secret may be sent to. */
  hosts: string[]
  /** What clients send instead of the value; default derived from the name. */
  placeholder?: string
}

/** `{{secret:NAME}}` inside a header rule's value. */
export const SECRET_REFERENCE = /\{\{secret:([^{}]*)\}\}/g

/** What looks meant as a secret reference, in any case or spacing: `{{ Secret:x }}`, `{secret:x}`. */
const SECRET_LIKE = /\{\s*secret\s*:/i
/** The same, or a brace pair left over in a `set` value once its exact references are taken out. */
const LOOSE_SECRET_REFERENCE = new RegExp(`${SECRET_LIKE.source}|\\{\\{|\\}\\}`, 'i')

/** The names of the secrets a header value refers to, in order. */
export function secretReferencesIn (value: string): string[] {
  return [...value.matchAll(SECRET_REFERENCE)].map((match) => match[1] as string)
}

/**
 * Checks the `secrets` key (each secret has exactly one of `env` and `file`) and every
 * `{{secret:NAME}}` of the header rules against it: the secret exists, and every host of the rule is one the secret is granted to (a rule for `*.example.com`
 * may use a secret granted to `*` or `*.example.com`, not one granted to `api.example.com`), so a
 * secret can only ever be sent where its entry says.
 * @throws ConfigError naming the rule and the secret, never a value.
 */
function checkSecretReferences (
  headers: readonly ForwardProxyHeaderRule[] | undefined,
  secrets: Readonly<Record<string, SecretConfig>> | undefined,
  source: string
): void {
  for (const [name, secret] of Object.entries(secrets ?? {})) {
    if ((secret.env === undefined) === (secret.file === undefined)) {
      throw new ConfigError(`${source}: /secrets/${name}: give exactly one of "env" (an environment variable) and "file" (a file others cannot read)`)
    }
  }
  headers?.forEach((rule, index) => {
    for (const [name, value] of Object.entries(rule.setResponse ?? {})) {
      if (SECRET_LIKE.test(value)) {
        throw new ConfigError(`${source}: /headers/${index}/setResponse/${name} refers to a secret: secrets are put into requests only (a response header would hand the value to the client)`)
      }
    }
    for (const [name, value] of Object.entries(rule.set ?? {})) {
      if (LOOSE_SECRET_REFERENCE.test(value.replace(SECRET_REFERENCE, ''))) {
        throw new ConfigError(`${source}: /headers/${index}/set/${name} has a secret reference that is not written {{secret:NAME}} (lower case, no spaces, NAME as in /secrets): it would be sent as it is`)
      }
      for (const secretName of secretReferencesIn(value)) {
        const secret = secrets?.[secretName]
        if (secret === undefined) {
          throw new ConfigError(`${source}: /headers/${index}/set/${name} names the secret "${secretName}", which /secrets does not define`)
        }
        const granted = secret.hosts.map((entry) => compileHostPattern(splitSecretHost(entry)?.pattern ?? '')).filter((pattern): pattern is HostPattern => pattern !== null)
        const outside = rule.hosts.find((host) => !granted.some((pattern) => covers(pattern, host)))
        if (outside !== undefined) {
          throw new ConfigError(`${source}: /headers/${index}/set/${name} uses the secret "${secretName}" for "${outside}", a host its /secrets/${secretName}/hosts does not grant`)
        }
      }
    }
  })
}

/** True when every host `hostPattern` matches is also matched by `granted`. */
function covers (granted: HostPattern, hostPattern: string): boolean {
  if (granted.text === '*') return true
  if (hostPattern === '*') return false
  if (hostPattern.startsWith('*.')) {
    const suffix = canonicalHost(hostPattern.slice(2))
    if (suffix === null || !granted.text.startsWith('*.')) return false
    const grantedSuffix = canonicalHost(granted.text.slice(2))
    return grantedSuffix !== null && (suffix === grantedSuffix || suffix.endsWith(`.${grantedSuffix}`))
  }
  if (hostPattern.includes('/')) return granted.text === hostPattern
  // A bare IPv6 literal (`::1`), as host patterns may be written, is read like its bracketed form.
  const host = canonicalHost(isIP(hostPattern) === 6 ? `[${hostPattern}]` : hostPattern)
  return host !== null && granted.matches(host)
}

/** The `metrics` key of the configuration file, defaults applied. */
export interface MetricsListenerConfig {
  host: string
  port: number
}

/** Defaults of the `metrics` key: loopback only, Prometheus' registered exporter port. */
const DEFAULT_METRICS_LISTENER: MetricsListenerConfig = { host: '127.0.0.1', port: 9464 }

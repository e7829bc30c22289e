import { readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import Ajv from 'ajv'
import { CONFIG_SCHEMA } from './config-schema'
import { ConfigError, describeSchemaError } from './config-error'
import type { ForwardProxyHeaderRule } from '../../types/header-rules'
import type { ForwardProxyClientProtocols } from '../../types/interception'
import { createHeaderRulesTransform } from '../forward/header-rules-transform'
import { createHostListSelector, ForwardProxyRuleError } from '../interception/host-list-selector'
import { parseCidr } from '../security/cidr'
import type { LogConfig } from './logger-options'
import { DEFAULT_METRICS_LISTENER, type MetricsListenerConfig } from './metrics-listener'

export { ConfigError } from './config-error'

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
  users?: Record<string, string>
  /** Brute-force guard of `users` (the plugin's `auth.failureLimit`). */
  authFailureLimit?: { maxFailures?: number, window?: number } | false
  destinations?: {
    allowedHosts?: string[]
    deniedHosts?: string[]
    allowedPorts?: number[] | '*'
    allowPrivateNetworks?: boolean
    allowedNetworks?: string[]
  }
  limits?: { maxConcurrentTunnels?: number, tunnelIdleTimeout?: number, httpActivityTimeout?: number, connectTimeout?: number, firstByteTimeout?: number, maxConcurrentRequests?: number, maxStreamResets?: number }
  interception?: InterceptionConfig
  headers?: ForwardProxyHeaderRule[]
  dataDirectory: string
  /** Processes that share the listeners (Node `cluster`); 1, the default, runs in this process. */
  workers?: number
  log: LogConfig
  /** The Prometheus endpoint's listener; absent means no endpoint. */
  metrics?: MetricsListenerConfig
  /** The plugin's `propagateTraceContext`. */
  propagateTraceContext?: boolean
}

/** The `interception` key: which hosts are intercepted and how; paths resolved against the file's folder. */
export interface InterceptionConfig {
  hosts: string[]
  /** The operator CA that signs the leaves presented to clients (PEM files). */
  ca?: { cert: string, key: string }
  /** The EST service (RFC 7030) that issues the leaves instead; never together with `ca`. */
  est?: EstConfig
  /** Extra CA certificates (a PEM file) trusted for destinations, beside Node's default roots. */
  trustedDestinationCa?: string
  clientProtocols?: ForwardProxyClientProtocols
  handshakeTimeout?: number
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

const validate = new Ajv({ allErrors: false, strict: true, verbose: true }).compile(CONFIG_SCHEMA)

/**
 * Validates a parsed configuration object against the schema and applies defaults.
 * `source` names the file in messages; `baseDirectory` anchors relative paths.
 * @throws ConfigError naming the bad key and what was expected.
 */
export function parseConfig (value: unknown, source: string, baseDirectory: string): ProxyServerConfig {
  if (!validate(value)) {
    throw new ConfigError(`${source}: ${describeSchemaError(validate.errors ?? [])}`)
  }
  const config = value as Partial<ProxyServerConfig>
  requireTlsForHttp2(config.listen ?? [], source)
  requireOneLeafSource(config.interception, source)
  checkRules(config, source)
  checkNetworks(config, source)
  const { interception } = config
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
            ...(interception.ca === undefined ? {} : { ca: { cert: resolve(baseDirectory, interception.ca.cert), key: resolve(baseDirectory, interception.ca.key) } }),
            ...(interception.est === undefined ? {} : { est: resolveEstPaths(interception.est, baseDirectory) }),
            ...(interception.trustedDestinationCa === undefined ? {} : { trustedDestinationCa: resolve(baseDirectory, interception.trustedDestinationCa) })
          }
        }),
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
    if (parseCidr(text) === null) {
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
  } catch (error) {
    throw new ConfigError(`${path}: not valid JSON (${(error as Error).message})`)
  }
  return parseConfig(value, path, dirname(resolve(path)))
}

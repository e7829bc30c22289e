// Builds and starts the bundled server: the Fastify app, its listeners and the proxy registered on
// them.

import '../../types/augment'
import cluster from 'node:cluster'
import { createServer as createHttpServer } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { Http2SecureServer } from 'node:http2'
import { forwardProxy } from '../plugin'
import type { ProxyServer } from '../connect/listener'
import { secondaryServersOf } from '../connect/secondary-servers'
import type { ForwardProxyOptions } from '../../types/options'
import type { ForwardProxyCaptureOptions } from '../../types/capture'
import { captureFileOfWorker, type CaptureConfig } from './capture-config'
import { CAPTURE_DEFAULTS } from '../capture/capture-settings'
import type { ForwardProxyHeaderRule } from '../../types/header-rules'
import { proxyClientErrorHandler } from '../protocol/error-responses'
import { proxyFrameworkErrors } from '../framework-errors'
import { secretReferencesIn, type ListenerConfig, type ProxyServerConfig } from './config'
import { loadListenerTls, type ListenerTlsFiles, readConfigFile } from './config-files'
import { ConfigError } from './config-errors'
import { redisOption } from './redis-option'
import type { ForwardProxyRedisOptions } from '../../types/shared-limits'
import { WORKERS_LIMIT_STORE } from '../core/shared-limits-options'
import { isWorker } from './workers'
import { workersLimitStore } from './workers-limit-store'
import {
  closeAllConnections,
  closeIdleConnections,
  createHttp2Listener,
  SERVER_TIMEOUTS,
  TLS_HANDSHAKE_TIMEOUT,
  http2ServerOptions,
  prepareHttp2Server,
  HTTP2_SESSION_TIMEOUT
} from './http2-listener'
import type { DevelopmentCaInUse } from './interception-from-config'
import type { ReloadTarget } from './reload'
import { createHostListSelector } from '../interception/host-list-selector'
import { createHeaderRulesTransform } from '../forward/header-rules'
import { loadSecrets, resolveSecretReferences, secretsOption } from './secrets'
import type { MetricsEndpoint } from './metrics'
import { proxyLoggerOptions } from './logging'
import { writeAccessLinesWith } from '../telemetry/access-line'
import { parseIP } from '../protocol/hosts'

/** A running proxy server. */
export interface RunningProxyServer {
  readonly app: FastifyInstance
  /** One URL per listener, with the port actually bound (`http://127.0.0.1:8080`). */
  readonly urls: string[]
  /**
   * One Node server per listener, in configuration order; the first is `app.server`. A listener
   * with `http2` has an HTTP/2 TLS server (`Http2SecureServer`, HTTP/1.1 allowed).
   */
  readonly servers: ProxyServer[]
  /**
   * The development CA signing intercepted leaves (interception without `ca`): its files and
   * whether this start created it. Undefined with an operator CA or without interception.
   */
  readonly developmentCa: DevelopmentCaInUse
  /** The Prometheus endpoint (`http://127.0.0.1:9464/metrics`), when the configuration has `metrics`. */
  readonly metricsUrl: string | undefined
  /** The configuration in force, and how a reload changes it (see reload.ts). */
  readonly reload: ReloadTarget
  /**
   * Stops accepting, closes open tunnels, lets in-flight requests finish for the shutdown grace
   * period, then closes every remaining connection and listener.
   */
  close (): Promise<void>
}

/** How long `close()` lets in-flight requests finish before cutting their connections (ms). */
const DEFAULT_SHUTDOWN_GRACE_PERIOD = 10_000

/** Options of {@link startProxyServer} that are not part of the configuration file. */
export interface StartOptions {
  /**
   * Milliseconds `close()` waits for in-flight requests (a long download, a server-sent event
   * stream) before it closes their connections. Default {@link DEFAULT_SHUTDOWN_GRACE_PERIOD}.
   */
  readonly shutdownGracePeriod?: number
}

/**
 * Maps the configuration file onto the plugin's options. `redis` is the plugin's `redis` option,
 * built once at start-up ({@link redisOption}): the key needs a restart, so a reload keeps it.
 */
function pluginOptionsFromConfig (config: ProxyServerConfig, redis?: ForwardProxyRedisOptions): ForwardProxyOptions {
  const secretValues = loadSecrets(config.secrets)
  return {
    ...(redis === undefined ? {} : { redis }),
    ...(config.users === undefined
      ? {}
      : { auth: { users: config.users, ...(config.authFailureLimit === undefined ? {} : { failureLimit: config.authFailureLimit }) } }),
    ...(config.destinations === undefined ? {} : { destinations: config.destinations }),
    ...(config.limits === undefined ? {} : { limits: config.limits }),
    ...(config.propagateTraceContext === undefined ? {} : { propagateTraceContext: config.propagateTraceContext }),
    ...(config.via === undefined ? {} : { via: config.via }),
    ...(config.upstreamProxies === undefined ? {} : { upstreamProxies: upstreamProxiesOption(config.upstreamProxies) }),
    ...(config.headers === undefined || config.headers.length === 0
      ? {}
      : { transforms: [createHeaderRulesTransform(resolveSecretReferences(config.headers, config.secrets ?? {}))] }),
    ...(config.secrets === undefined ? {} : { secrets: secretsOption(config.secrets, secretValues) }),
    ...(config.capture === undefined ? {} : { capture: captureOption(config.capture, config.workers ?? 1, config.headers ?? []) })
  }
}

/**
 * The plugin's `capture` from the file's: in a worker of a `workers` server, that worker's own
 * file; `redactHeaders` (or its default) with every header a header rule sets to a value of its
 * own added, as the log redacts them: such a value is the operator's, often a credential,
 * whatever its name. (One that uses `{{secret:NAME}}` is written as the secret's placeholder.)
 */
function captureOption (capture: CaptureConfig, workers: number, headers: readonly ForwardProxyHeaderRule[]): ForwardProxyCaptureOptions {
  const worker = workers > 1 ? cluster.worker?.id : undefined
  const redacted = new Set((capture.redactHeaders ?? CAPTURE_DEFAULTS.redactHeaders).map((name) => name.toLowerCase()))
  for (const rule of headers) {
    for (const [name, value] of Object.entries(rule.set ?? {})) {
      if (secretReferencesIn(value).length === 0) redacted.add(name.toLowerCase())
    }
  }
  return {
    ...capture,
    redactHeaders: [...redacted],
    ...(worker === undefined ? {} : { file: captureFileOfWorker(capture.file, worker) })
  }
}

/** The plugin's `upstreamProxies` from the file's: `ca` files read (a missing one names its key). */
function upstreamProxiesOption (upstreams: NonNullable<ProxyServerConfig['upstreamProxies']>): ForwardProxyOptions['upstreamProxies'] {
  if (upstreams === 'environment') return upstreams
  return upstreams.map((rule, index) => ({
    hosts: rule.hosts,
    url: rule.url,
    ...(rule.ca === undefined ? {} : { ca: readConfigFile(rule.ca, `/upstreamProxies/${index}/ca`) })
  }))
}

/**
 * In a worker of a `workers` server without `redis`: the option that counts its users' limits
 * and the authentication lockout in the first process, for all workers. Nothing otherwise.
 */
function sharedLimitsOfWorkers (redis: ForwardProxyRedisOptions | undefined): object {
  return redis === undefined && isWorker() ? { [WORKERS_LIMIT_STORE]: workersLimitStore() } : {}
}

/**
 * Starts the ready-to-run proxy: one Fastify app with the forward proxy and `GET /healthz`,
 * serving every configured listener (the first is Fastify's own server, the others are joined
 * with `forwardProxy.attachServer`). Refuses to start an open proxy on a non-loopback address
 * (no `users`, no `allowAnonymous`), checked like every file before anything listens.
 * @throws ConfigError for a configuration that cannot or must not be served.
 */
export async function startProxyServer (config: ProxyServerConfig, options: StartOptions = {}): Promise<RunningProxyServer> {
  const gracePeriod = options.shutdownGracePeriod ?? DEFAULT_SHUTDOWN_GRACE_PERIOD
  const [first, ...others] = config.listen
  if (first === undefined) throw new ConfigError('at least one listener is required')
  checkListenerExposure(config)
  // Every certificate is checked before anything listens.
  const tlsFiles = config.listen.map((listener, index) => listener.tls === undefined ? undefined : loadListenerTls(listener.tls, index))
  const redis = config.redis === undefined ? undefined : redisOption(config.redis)
  const app = createProxyApp(first, tlsFiles[0], config)
  await app.register(forwardProxy, { ...pluginOptionsFromConfig(config, redis), ...sharedLimitsOfWorkers(redis) })
  const interception = config.interception === undefined
    ? undefined
    : await interceptionFromConfig().registerInterceptionFromConfig(app, config.interception, config.dataDirectory)
  let current = config
  const reload: ReloadTarget = {
    current: () => current,
    apply (next) {
      checkListenerExposure(next)
      const hosts = next.interception?.hosts
      // Checked before anything changes: createHostListSelector throws on a bad pattern.
      if (hosts !== undefined) createHostListSelector(hosts)
      app.forwardProxy.reconfigure(pluginOptionsFromConfig(next, redis))
      if (hosts !== undefined) interception?.setHosts(hosts)
      current = next
    }
  }

  const extraServers: ProxyServer[] = []
  let extrasClosed: Promise<unknown> = Promise.resolve()
  // Registered after the plugin, so it runs before the plugin's own onClose, which destroys the
  // forwarding dispatcher and with it every forwarded response still streaming. Fastify's own
  // server has closed by then; the other listeners are waited for here.
  app.addHook('onClose', async function waitForOtherListeners () {
    // Connections whose last response ended meanwhile; busy ones keep the grace period.
    for (const server of extraServers) closeIdleConnections(server)
    await extrasClosed
  })
  let metricsEndpoint: MetricsEndpoint | undefined
  const close = async (): Promise<void> => {
    const metricsClosed = metricsEndpoint?.close()
    // Stop accepting on every listener at once; the extra servers' close waits for their
    // sockets, tunnels included, which app.close() ends (the plugin's preClose).
    extrasClosed = Promise.all(extraServers.map((server) => new Promise<void>((resolve) => {
      if (!server.listening) { resolve(); return }
      server.close(() => resolve())
    })))
    const servers = (): ProxyServer[] => [app.server, ...secondaryServersOf(app), ...extraServers]
    // Fastify closes idle HTTP/1.1 connections only, and no HTTP/2 session, idle or not.
    for (const server of servers()) closeIdleConnections(server)
    // A response still streaming would hold close() forever.
    const cut = setTimeout(() => { for (const server of servers()) closeAllConnections(server) }, gracePeriod)
    try {
      await app.close()
    } finally {
      clearTimeout(cut)
      await metricsClosed
    }
  }
  try {
    if (config.metrics !== undefined) {
      metricsEndpoint = await metricsEndpointModule().startMetricsEndpoint(config.metrics)
      app.forwardProxy.addOwnListener(metricsEndpoint.server)
    }
    await app.listen({ host: first.host, port: first.port })
    const urls = [listenerUrl(first, app.server.address() as AddressInfo)]
    for (const [i, listener] of others.entries()) {
      const server = createListenerServer(listener, tlsFiles[i + 1])
      server.on('clientError', proxyClientErrorHandler)
      app.forwardProxy.attachServer(server)
      extraServers.push(server)
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen(listener.port, listener.host, () => { server.removeListener('error', reject); resolve() })
      })
      urls.push(listenerUrl(listener, server.address() as AddressInfo))
    }
    return { app, urls, servers: [app.server, ...extraServers], developmentCa: interception?.developmentCa, metricsUrl: metricsEndpoint?.url, reload, close }
  } catch (error) {
    await close()
    throw error
  }
}

// Loaded only when the configuration uses them: the interception code and the OpenTelemetry SDK
// (about 6 MiB of resident memory, docs/benchmarks.md).
// Each names what it takes from the module, so the unused-export check (knip) sees it used.
function interceptionFromConfig (): Pick<typeof import('./interception-from-config'), 'registerInterceptionFromConfig'> {
  const { registerInterceptionFromConfig }: typeof import('./interception-from-config') = require('./interception-from-config')
  return { registerInterceptionFromConfig }
}

function metricsEndpointModule (): Pick<typeof import('./metrics'), 'startMetricsEndpoint'> {
  const { startMetricsEndpoint }: typeof import('./metrics') = require('./metrics')
  return { startMetricsEndpoint }
}

/** The Node server of a further listener: HTTP/1.1, HTTPS, or HTTP/2 TLS with HTTP/1.1. */
function createListenerServer (listener: ListenerConfig, files: ListenerTlsFiles | undefined): ProxyServer {
  if (files === undefined) return createHttpServer(SERVER_TIMEOUTS)
  return listener.http2 === true ? createHttp2Listener(files) : createHttpsServer({ ...files, ...SERVER_TIMEOUTS, handshakeTimeout: TLS_HANDSHAKE_TIMEOUT })
}

function listenerUrl (listener: ListenerConfig, address: AddressInfo): string {
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return `${listener.tls === undefined ? 'http' : 'https'}://${host}:${address.port}`
}

/**
 * Creates the Fastify app of the bundled server, with `GET /healthz`. Its own server is the
 * first listener's: HTTP/1.1, HTTPS, or (with `http2`) an HTTP/2 TLS server that also speaks
 * HTTP/1.1. With `http2` the app's raw request and reply are Node's HTTP/2 compatibility
 * objects at run time, though the returned type keeps Fastify's HTTP/1.1 defaults.
 */
function createProxyApp (first: ListenerConfig, files: ListenerTlsFiles | undefined, config: Pick<ProxyServerConfig, 'log' | 'headers'>): FastifyInstance {
  const { accessLineWriter, ...loggerOptions } = proxyLoggerOptions(config.log, config.headers)
  const common = { ...loggerOptions, clientErrorHandler: proxyClientErrorHandler }
  const http2 = first.http2 === true && files !== undefined
  const app = http2
    ? Fastify({ ...common, frameworkErrors: proxyFrameworkErrors as unknown as FastifyServerOptions<Http2SecureServer>['frameworkErrors'], http2: true, https: http2ServerOptions(files), http2SessionTimeout: HTTP2_SESSION_TIMEOUT }) as unknown as FastifyInstance
    : Fastify({
      ...common,
      frameworkErrors: proxyFrameworkErrors,
      keepAliveTimeout: SERVER_TIMEOUTS.keepAliveTimeout,
      requestTimeout: SERVER_TIMEOUTS.requestTimeout,
      ...(files === undefined
        ? { http: { headersTimeout: SERVER_TIMEOUTS.headersTimeout } }
        : { https: { ...files, headersTimeout: SERVER_TIMEOUTS.headersTimeout, handshakeTimeout: TLS_HANDSHAKE_TIMEOUT } })
    })
  writeAccessLinesWith(app.log, accessLineWriter)
  if (http2) prepareHttp2Server(app.server as unknown as Http2SecureServer)
  // Fastify gives clientErrorHandler to its main server only, not to the servers it binds for
  // the other addresses of a name such as `localhost`; nor are those HTTP/2 servers configured.
  app.addHook('onListen', async function prepareSecondaryBindings () {
    for (const server of secondaryServersOf(app)) {
      if (server.listenerCount('clientError') === 0) server.on('clientError', proxyClientErrorHandler)
      if (http2) prepareHttp2Server(server as Http2SecureServer)
    }
  })
  app.get('/healthz', async () => ({ status: 'ok' }))
  return app
}

const V4_MAPPED_PREFIX = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]

/**
 * True when `host` only accepts connections from this machine: `localhost`, `127.0.0.0/8`,
 * `::1`, or `::ffff:127.0.0.0/104`. Any other name may resolve to anything, and IPv6 forms that
 * merely carry an IPv4 address (NAT64, 6to4, IPv4-compatible) are addresses of other hosts.
 */
export function isLoopbackHost (host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true
  const bytes = parseIP(host)
  if (bytes === null) return false
  if (bytes.length === 4) return bytes[0] === 127
  if (V4_MAPPED_PREFIX.every((value, index) => bytes[index] === value)) return bytes[12] === 127
  return bytes.every((value, index) => value === (index === 15 ? 1 : 0))
}

/**
 * Refuses an open proxy: a listener on a non-loopback address while no `users` are configured,
 * unless the file says `"allowAnonymous": true`. Run on the final configuration (after
 * `--host`), before anything listens.
 * @throws ConfigError naming the listener, `users` and `allowAnonymous`.
 */
function checkListenerExposure (config: ProxyServerConfig): void {
  if (config.allowAnonymous === true) return
  if (config.users !== undefined && Object.keys(config.users).length > 0) return
  config.listen.forEach((listener, index) => {
    if (isLoopbackHost(listener.host)) return
    // The first listener's address may come from the command line instead of the file.
    const key = index === 0 ? '/listen/0/host (or --host)' : `/listen/${index}/host`
    throw new ConfigError(`${key}: "${listener.host}" is not a loopback address and no "users" are configured, so anyone who can reach it could use the proxy. Add "users" (proxy authentication), listen on 127.0.0.1, or set "allowAnonymous": true to accept this deliberately`)
  })
}

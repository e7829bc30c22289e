// The two Fastify plugins: `forwardProxy` (options, runtime, the proxy route, the server's CONNECT
// listener) and `tlsInterception` (the in-memory endpoint and how CONNECT reaches it).

import fp from 'fastify-plugin'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import type { ForwardProxyOptions } from '../types/options'
import type { ForwardProxyControl } from '../types/control'
import { resolveProxySettings, checkTransform, changedRegistrationOnlySetting } from './core/options'
import { TransformRegistry } from './core/transform-lists'
import {
  DEFAULT_DESTINATION_TLS,
  resolveDestinationTlsSettings,
  checkProviderSource,
  checkSelectorSource,
  resolveInterceptionSettings
} from './core/interception-options'
import { proxyDestinationOf, decorateProxyUser, interceptedTunnelOf } from './core/proxy-request'
import { proxyRoutes, addForwardedMethods } from './routes'
import { proxyRouteConstraint } from './proxy-route-constraint'
import { attachProxyToServer, type ProxyServer } from './connect/listener'
import { secondaryServersOf } from './connect/secondary-servers'
import {
  TunnelRegistry,
  ConcurrencyLimit,
  rememberProxyRuntime,
  type ProxyRuntime,
  proxyRuntimeOf,
  type InterceptionRuntime
} from './core/runtime'
import { DestinationPolicy, OwnListeners } from './security/destination-policy'
import { UserPolicy } from './security/user-policy'
import { openSharedLimits } from './limit-store-setup'
import { workersLimitStoreOf } from './core/shared-limits-options'
import { transformForwardedResponse } from './forward/forwarded-response'
import { createDestinationDispatcher, createTlsDestinationDispatcher, createUpstreamDispatcher } from './forward/destinations'
import { INTERCEPTION_ADDRESS, InterceptionEndpoint } from './interception/endpoint'
import { ClientRefusals } from './interception/client-refusals'
import { headerRulesName } from './forward/header-rules'
import type { ForwardProxyDestination } from '../types/destination'
import { recheckOpenTunnels } from './connect/revocation'
import type { Agent } from 'undici'
import type { TlsInterceptionOptions } from '../types/interception'
import { ForwardProxyOptionsError } from './protocol/errors'
import { TrafficCapture } from './capture/traffic-capture'
import type { SecretScrubber } from './security/secret-scrubber'
import type { ForwardProxyCaptureStreamOptions } from '../types/capture'
import { PROXY_METER_NAME, PROXY_METER_VERSION, recordCaptureDropped, recordCaptureEntry } from './telemetry/metrics'
import {
  InterceptionOtherContextError,
  InterceptionRegisteredTwiceError,
  InterceptionWithoutProxyError,
  NotAServerError,
  ProxyClosedError,
  ProxyUnderPrefixError,
  TransformAfterReadyError
} from './core/usage-errors'

/** True for what can be tracked as a listener: a Node server (its address() and its events). */
function isServer (server: unknown): boolean {
  const candidate = server as { address?: unknown, on?: unknown } | null
  return typeof candidate === 'object' && candidate !== null && typeof candidate.address === 'function' && typeof candidate.on === 'function'
}

async function forwardProxyPlugin (fastify: FastifyInstance, options: ForwardProxyOptions): Promise<void> {
  if (fastify.prefix !== '') throw new ProxyUnderPrefixError(fastify.prefix)
  const settings = resolveProxySettings(options)
  const sharedLimits = openSharedLimits(settings.redis, workersLimitStoreOf(options), fastify.log)
  const policy = new DestinationPolicy(settings.destinations)
  const ownListeners = new OwnListeners()
  const connector = { policy, resolver: settings.resolver, connectTimeout: settings.limits.connectTimeout, ownListeners, upstreams: settings.upstreams }
  const runtime: ProxyRuntime = {
    settings,
    registeredOn: fastify,
    policy,
    shuttingDown: false,
    connector,
    tunnels: new TunnelRegistry(settings.limits.maxConcurrentTunnels),
    userPolicy: new UserPolicy(sharedLimits),
    sharedLimits,
    forwardedRequests: new ConcurrencyLimit(settings.limits.maxConcurrentRequests),
    ...createDispatchers(),
    destinationTls: DEFAULT_DESTINATION_TLS,
    transforms: new TransformRegistry(settings.transforms),
    capture: createTrafficCapture(fastify.log, () => runtime.settings.secrets?.knownValuesScrubber() ?? null)
  }
  runtime.capture.apply(settings.capture)
  let ready = false
  // Dispatchers replaced by a reconfiguration, closing once their requests in flight are done.
  const retiring = new Set<Agent>()
  function createDispatchers (): Pick<ProxyRuntime, 'dispatcher' | 'tlsDispatcher' | 'upstreamDispatcher'> {
    // httpActivityTimeout is fixed at registration.
    return {
      dispatcher: createDestinationDispatcher(connector, settings.limits.httpActivityTimeout),
      tlsDispatcher: createTlsDestinationDispatcher(connector, () => runtime.destinationTls, settings.limits.httpActivityTimeout),
      upstreamDispatcher: createUpstreamDispatcher(connector, settings.limits.httpActivityTimeout)
    }
  }

  if (!fastify.supportedMethods.includes('CONNECT')) fastify.addHttpMethod('CONNECT')
  addForwardedMethods(fastify)
  fastify.addConstraintStrategy(proxyRouteConstraint)
  decorateProxyUser(fastify)
  fastify.decorateRequest('interception', {
    getter (this: { raw: object }) { return interceptedTunnelOf(this.raw)?.interception ?? null }
  })
  fastify.decorateRequest('tunnelMode', null)
  // Where the plugin is registered among the application's onSend hooks: an application orders
  // its own around the response transforms.
  fastify.addHook('onSend', transformForwardedResponse)
  fastify.decorateRequest('proxyDestination', {
    getter (this: { raw: Parameters<typeof proxyDestinationOf>[0] }) { return proxyDestinationOf(this.raw) }
  })

  const attach = (server: ProxyServer, routeRequests: boolean): void => {
    if (runtime.shuttingDown) throw new ProxyClosedError('attachServer')
    if (!isServer(server)) throw new NotAServerError('attachServer')
    ownListeners.add(server)
    attachProxyToServer(server, fastify, settings.pseudonym, {
      routeRequests,
      firstByteTimeout: settings.limits.firstByteTimeout,
      maxStreamResets: settings.limits.maxStreamResets
    })
  }
  const control: ForwardProxyControl = {
    get activeTunnels () { return runtime.tunnels.active },
    get activeRequests () { return runtime.forwardedRequests.active },
    get interceptionAddress () { return runtime.interception === undefined ? null : INTERCEPTION_ADDRESS },
    attachServer: (server) => attach(server, true),
    addOwnListener (server) {
      if (!isServer(server)) throw new NotAServerError('addOwnListener')
      ownListeners.add(server)
    },
    addTransform (transform) {
      if (ready) throw new TransformAfterReadyError()
      runtime.transforms.add(checkTransform(transform, 'addTransform(transform)'), 'forwarded')
    },
    captures (options) {
      return runtime.capture.open(captureBufferSize(options))
    },
    reconfigure (options) {
      // Its capture file would be opened after the one closing, and never closed.
      if (runtime.shuttingDown) throw new ProxyClosedError('reconfigure')
      const next = resolveProxySettings(options)
      const fixed = changedRegistrationOnlySetting(runtime.settings, next)
      if (fixed !== null) throw new ForwardProxyOptionsError(fixed, 'cannot change while the server runs: restart it to apply the change')
      const policy = new DestinationPolicy(next.destinations)
      Object.assign(connector, { policy, resolver: next.resolver, connectTimeout: next.limits.connectTimeout, upstreams: next.upstreams })
      runtime.tunnels.setLimit(next.limits.maxConcurrentTunnels)
      runtime.forwardedRequests.setLimit(next.limits.maxConcurrentRequests)
      runtime.transforms.replaceOptionTransforms(next.transforms)
      runtime.policy = policy
      // A value the reload rotated may still come back from its destination for a while.
      next.secrets?.carryRetiredValuesFrom(runtime.settings.secrets)
      runtime.settings = next
      runtime.capture.apply(next.capture)
      // Pooled connections were dialed under the old policy: new requests dial again.
      const old = [runtime.dispatcher, runtime.tlsDispatcher, runtime.upstreamDispatcher]
      Object.assign(runtime, createDispatchers())
      for (const dispatcher of old) {
        retiring.add(dispatcher)
        dispatcher.close().then(() => retiring.delete(dispatcher), () => retiring.delete(dispatcher))
      }
      recheckOpenTunnels(runtime)
    }
  }
  rememberProxyRuntime(control, runtime)
  fastify.decorate('forwardProxy', control)

  attach(fastify.server, false)
  fastify.addHook('onListen', async function attachSecondaryServers () {
    for (const server of secondaryServersOf(fastify)) attach(server, false)
  })
  fastify.addHook('preClose', async function closeTunnels () {
    runtime.shuttingDown = true
    await runtime.tunnels.destroyAll()
  })
  fastify.addHook('onReady', async function freezeTransforms () {
    ready = true
  })
  fastify.addHook('onClose', async function closeDispatchers () {
    await Promise.all([runtime.dispatcher, runtime.tlsDispatcher, runtime.upstreamDispatcher, ...retiring]
      .map(async (dispatcher) => await dispatcher.destroy()))
    // After the tunnels: their slots are given back before the store closes.
    await sharedLimits?.close()
    // Last: the requests and tunnels that just ended are recorded before the file closes.
    await runtime.capture.close()
  })

  await fastify.register(proxyRoutes(runtime))
}

/** The capture of one registration, its file failures logged and its entries counted. */
function createTrafficCapture (log: FastifyBaseLogger, scrubber: () => SecretScrubber | null): TrafficCapture {
  return new TrafficCapture({ name: PROXY_METER_NAME, version: PROXY_METER_VERSION }, {
    onFileStopped: (file, error) => log.error({ capture: { file, error: error.message } }, 'capture file stopped: no more entries are written to it until capture is reconfigured'),
    onDropped: recordCaptureDropped,
    onRecorded: recordCaptureEntry
  }, scrubber)
}

/** The `bufferSize` of `captures(options)`, checked. */
function captureBufferSize (options: ForwardProxyCaptureStreamOptions | undefined): number | undefined {
  const size = options?.bufferSize
  if (size !== undefined && (typeof size !== 'number' || !Number.isInteger(size) || size < 1)) {
    throw new ForwardProxyOptionsError('captures(options).bufferSize', `must be a positive integer: ${String(size)}`)
  }
  return size
}

/**
 * The forward proxy plugin: `fastify.register(forwardProxy, options)`. Turns the application
 * into an HTTP forward proxy (HTTP/1.1 CONNECT tunnels and absolute-form `http://` forwarding)
 * with proxy authentication and an SSRF-safe destination policy; the application's own routes
 * keep working on the same port. Options are validated at registration.
 * @throws ForwardProxyOptionsError (at registration) naming the first bad option.
 */
export const forwardProxy = fp(forwardProxyPlugin, { fastify: '5.x', name: 'fastify-forward-proxy' })

async function tlsInterceptionPlugin (fastify: FastifyInstance, options: TlsInterceptionOptions): Promise<void> {
  const settings = resolveInterceptionSettings(options)
  const destinationTls = resolveDestinationTlsSettings(options)
  const runtime = proxyRuntimeOf(fastify.forwardProxy)
  if (runtime === undefined) throw new InterceptionWithoutProxyError()
  if (runtime.interception !== undefined) throw new InterceptionRegisteredTwiceError()
  if (runtime.registeredOn !== fastify) throw new InterceptionOtherContextError()

  runtime.destinationTls = destinationTls
  const clientRefusals = settings.passthroughOnClientRefusal === null ? null : new ClientRefusals(settings.passthroughOnClientRefusal)
  // Read at the time of use: secrets and transforms change with a reconfiguration.
  const keepsInterception = (destination: ForwardProxyDestination): string | null => {
    if (runtime.settings.secrets?.grantsDestination(destination.host, destination.port) === true) return 'a secret is granted to it'
    if (runtime.transforms.lists.intercepted.some((transform) => headerRulesName(transform, destination.host))) return 'a header rule names it'
    return null
  }
  for (const transform of settings.transforms) runtime.transforms.add(transform, 'intercepted')
  const interception: InterceptionRuntime = {
    settings,
    endpoint: new InterceptionEndpoint(fastify, {
      clientProtocols: settings.clientProtocols,
      handshakeTimeout: settings.handshakeTimeout,
      pseudonym: runtime.settings.pseudonym,
      maxStreamResets: runtime.settings.limits.maxStreamResets,
      clientRefusals,
      keepsInterception
    }),
    clientRefusals,
    keepsInterception,
    selector: settings.selector,
    certificateProvider: settings.certificateProvider
  }
  runtime.interception = interception

  // Decorators may be added after this plugin is registered; they are looked up once ready.
  fastify.addHook('onReady', async function resolveInterceptionServices () {
    if (interception.selector === null && fastify.forwardProxyInterceptionSelector !== undefined) {
      interception.selector = checkSelectorSource(fastify.forwardProxyInterceptionSelector, 'forwardProxyInterceptionSelector')
    }
    if (interception.certificateProvider === null && fastify.forwardProxyCertificateProvider !== undefined) {
      interception.certificateProvider = checkProviderSource(fastify.forwardProxyCertificateProvider, 'forwardProxyCertificateProvider')
    }
    if (interception.certificateProvider === null) {
      throw new ForwardProxyOptionsError('certificateProvider', 'is required by tlsInterception: pass it in the options or decorate the instance with forwardProxyCertificateProvider (there is no built-in CA)')
    }
  })
}

/**
 * TLS interception: `fastify.register(tlsInterception, { selector, certificateProvider, ...options })`
 * after `forwardProxy`. Tunnels the selector picks are answered 200 without dialing
 * the destination, their TLS is terminated with the provider's certificate for the CONNECT
 * target in an in-memory endpoint, and each request inside runs through the application's
 * hooks before it is sent to the destination over validated TLS. The selector and provider
 * may instead be decorated as `forwardProxyInterceptionSelector` and
 * `forwardProxyCertificateProvider` (objects, or factories `(request) => impl`); without a
 * selector nothing is intercepted.
 * @throws ForwardProxyOptionsError (at registration) naming the first bad option, and from
 * `fastify.ready()` when there is no certificate provider.
 */
export const tlsInterception = fp(tlsInterceptionPlugin, {
  fastify: '5.x',
  name: 'fastify-forward-proxy-tls-interception',
  dependencies: ['fastify-forward-proxy']
})

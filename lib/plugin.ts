import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import type { ForwardProxyOptions } from '../types/options'
import type { ForwardProxyControl } from '../types/control'
import { resolveProxySettings } from './options'
import { proxyDestinationOf } from './proxy-request'
import { proxyRouteConstraint } from './proxy-route-constraint'
import { proxyRoutes } from './proxy-routes'
import { attachProxyToServer, secondaryServersOf, type ProxyServer } from './attach-server'
import { TunnelRegistry } from './connect/tunnel-registry'
import { ConcurrencyLimit } from './concurrency-limit'
import { DestinationPolicy } from './security/destination-policy'
import { OwnListeners } from './security/own-listeners'
import { createDestinationDispatcher } from './forward/destination-dispatcher'
import { createTlsDestinationDispatcher } from './forward/tls-destination-dispatcher'
import { DEFAULT_DESTINATION_TLS } from './forward/destination-tls-settings'
import { checkTransform } from './options'
import { addForwardedMethods } from './forward/forwarded-methods'
import { rememberProxyRuntime, type ProxyRuntime } from './proxy-runtime'
import { decorateProxyUser } from './security/proxy-user'
import { interceptedTunnelOf } from './interception/intercepted-tunnels'
import { INTERCEPTION_ADDRESS } from './interception/interception-endpoint'

async function forwardProxyPlugin (fastify: FastifyInstance, options: ForwardProxyOptions): Promise<void> {
  const settings = resolveProxySettings(options)
  const policy = new DestinationPolicy(settings.destinations)
  const ownListeners = new OwnListeners()
  const connector = { policy, resolver: settings.resolver, connectTimeout: settings.limits.connectTimeout, ownListeners }
  const runtime: ProxyRuntime = {
    settings,
    policy,
    connector,
    tunnels: new TunnelRegistry(settings.limits.maxConcurrentTunnels),
    forwardedRequests: new ConcurrencyLimit(settings.limits.maxConcurrentRequests),
    dispatcher: createDestinationDispatcher(connector, settings.limits.httpActivityTimeout),
    tlsDispatcher: createTlsDestinationDispatcher(connector, () => runtime.destinationTls, settings.limits.httpActivityTimeout),
    destinationTls: DEFAULT_DESTINATION_TLS,
    transforms: [...settings.transforms]
  }
  let ready = false

  if (!fastify.supportedMethods.includes('CONNECT')) fastify.addHttpMethod('CONNECT')
  addForwardedMethods(fastify)
  fastify.addConstraintStrategy(proxyRouteConstraint)
  decorateProxyUser(fastify)
  fastify.decorateRequest('interception', {
    getter (this: { raw: object }) { return interceptedTunnelOf(this.raw)?.interception ?? null }
  })
  fastify.decorateRequest('proxyDestination', {
    getter (this: { raw: Parameters<typeof proxyDestinationOf>[0] }) { return proxyDestinationOf(this.raw) }
  })

  const attach = (server: ProxyServer, routeRequests: boolean): void => {
    ownListeners.add(server)
    attachProxyToServer(server, fastify, settings.pseudonym, { routeRequests, firstByteTimeout: settings.limits.firstByteTimeout, maxStreamResets: settings.limits.maxStreamResets })
  }
  const control: ForwardProxyControl = {
    get activeTunnels () { return runtime.tunnels.active },
    get activeRequests () { return runtime.forwardedRequests.active },
    get interceptionAddress () { return runtime.interception === undefined ? null : INTERCEPTION_ADDRESS },
    attachServer: (server) => attach(server, true),
    addOwnListener: (server) => ownListeners.add(server),
    addTransform (transform) {
      if (ready) throw new Error('fastify-forward-proxy: addTransform must be called before the server is ready')
      runtime.transforms.push(checkTransform(transform, 'addTransform(transform)'))
    }
  }
  rememberProxyRuntime(control, runtime)
  fastify.decorate('forwardProxy', control)

  attach(fastify.server, false)
  fastify.addHook('onListen', async function attachSecondaryServers () {
    for (const server of secondaryServersOf(fastify)) attach(server, false)
  })
  fastify.addHook('preClose', async function closeTunnels () {
    runtime.tunnels.destroyAll()
  })
  fastify.addHook('onReady', async function freezeTransforms () {
    ready = true
  })
  fastify.addHook('onClose', async function closeDispatchers () {
    await Promise.all([runtime.dispatcher.destroy(), runtime.tlsDispatcher.destroy()])
  })

  await fastify.register(proxyRoutes(runtime))
}

/**
 * The forward proxy plugin: `fastify.register(forwardProxy, options)`. Turns the application
 * into an HTTP forward proxy (HTTP/1.1 CONNECT tunnels and absolute-form `http://` forwarding)
 * with proxy authentication and an SSRF-safe destination policy; the application's own routes
 * keep working on the same port. Options are validated at registration.
 * @throws ForwardProxyOptionsError (at registration) naming the first bad option.
 */
export const forwardProxy = fp(forwardProxyPlugin, { fastify: '5.x', name: 'fastify-forward-proxy' })

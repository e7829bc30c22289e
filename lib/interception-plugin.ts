import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import type { TlsInterceptionOptions } from '../types/interception'
import { ForwardProxyOptionsError } from './options'
import { proxyRuntimeOf } from './proxy-runtime'
import { resolveDestinationTlsSettings } from './forward/destination-tls-settings'
import { checkProviderSource, checkSelectorSource, resolveInterceptionSettings } from './interception/interception-settings'
import { InterceptionEndpoint } from './interception/interception-endpoint'
import type { InterceptionRuntime } from './interception/interception-runtime'

async function tlsInterceptionPlugin (fastify: FastifyInstance, options: TlsInterceptionOptions): Promise<void> {
  const settings = resolveInterceptionSettings(options)
  const destinationTls = resolveDestinationTlsSettings(options)
  const runtime = proxyRuntimeOf(fastify.forwardProxy)
  if (runtime === undefined) throw new Error('fastify-forward-proxy: register forwardProxy before tlsInterception')
  if (runtime.interception !== undefined) throw new Error('fastify-forward-proxy: tlsInterception is already registered for this proxy')

  runtime.destinationTls = destinationTls
  for (const transform of settings.transforms) fastify.forwardProxy.addTransform(transform)
  const interception: InterceptionRuntime = {
    settings,
    endpoint: new InterceptionEndpoint(fastify, {
      clientProtocols: settings.clientProtocols,
      handshakeTimeout: settings.handshakeTimeout,
      pseudonym: runtime.settings.pseudonym,
      maxStreamResets: runtime.settings.limits.maxStreamResets
    }),
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

import { createServer, type Server, type ServerOptions } from 'node:https'
import type { AddressInfo } from 'node:net'
import type { TLSSocket } from 'node:tls'
import Fastify, { type FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import type { ForwardProxyOptions } from '../../lib/index'
import { resolveProxySettings } from '../../lib/options'
import { DestinationPolicy } from '../../lib/security/destination-policy'
import { TunnelRegistry } from '../../lib/connect/tunnel-registry'
import { createDestinationDispatcher } from '../../lib/forward/destination-dispatcher'
import { createTlsDestinationDispatcher } from '../../lib/forward/tls-destination-dispatcher'
import { DEFAULT_DESTINATION_TLS, type DestinationTlsSettings } from '../../lib/forward/destination-tls-settings'
import { forwardRequest } from '../../lib/forward/forward-handler'
import { createProxyErrorHandler } from '../../lib/proxy-error-handler'
import type { ProxyRuntime } from '../../lib/proxy-runtime'
import { LOOPBACK_TEST_POLICY } from './servers'

/** What the HTTPS origin saw of one request. */
export interface HttpsOriginRequest {
  method: string
  url: string
  headers: Record<string, string | string[] | undefined>
  /** ALPN protocol of the connection (false when none was negotiated). */
  alpn: string | false | null
  /** SNI server name the client sent, or false. */
  servername: string | false | null
}

/** A started HTTPS origin on 127.0.0.1. */
export interface HttpsOrigin {
  server: Server
  port: number
  /** Every request it received, in order. */
  requests: HttpsOriginRequest[]
}

/** Starts an HTTPS origin on 127.0.0.1:0 answering `ok <path>`; closed at teardown. */
export async function startHttpsOrigin (t: Test, options: ServerOptions): Promise<HttpsOrigin> {
  const requests: HttpsOriginRequest[] = []
  const server = createServer(options, (req, res) => {
    const socket = req.socket as TLSSocket
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, alpn: socket.alpnProtocol, servername: socket.servername })
    res.setHeader('content-type', 'text/plain')
    res.end(`ok ${req.url ?? ''}`)
  })
  server.on('tlsClientError', () => {})
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return { server, port: (server.address() as AddressInfo).port, requests }
}

/**
 * A stand-in for the intercepted tunnel's request path: a plain HTTP Fastify app whose every
 * origin-form request is forwarded with `forwardRequest` to `https://<destinationHost>:<port>` (scheme
 * https, Max-Forwards untouched), over a runtime built like the plugin builds it, with the
 * proxy route's error handler. Closed at teardown; returns its base URL.
 */
export async function startHttpsForwarder (
  t: Test,
  destinationPort: number,
  destinationTls: DestinationTlsSettings = DEFAULT_DESTINATION_TLS,
  options: ForwardProxyOptions = {},
  destinationHost = '127.0.0.1'
): Promise<{ app: FastifyInstance, url: string }> {
  const settings = resolveProxySettings({ destinations: LOOPBACK_TEST_POLICY, ...options })
  const policy = new DestinationPolicy(settings.destinations)
  const connector = { policy, resolver: settings.resolver, connectTimeout: settings.limits.connectTimeout }
  const runtime: ProxyRuntime = {
    settings,
    policy,
    connector,
    tunnels: new TunnelRegistry(1),
    dispatcher: createDestinationDispatcher(connector, settings.limits.httpActivityTimeout),
    tlsDispatcher: createTlsDestinationDispatcher(connector, () => runtime.destinationTls, settings.limits.httpActivityTimeout),
    destinationTls,
    transforms: [...settings.transforms]
  }
  const app = Fastify({ logger: false })
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', (_request, _payload, done) => done(null))
  app.setErrorHandler(createProxyErrorHandler(settings))
  app.all('*', async (request, reply) => {
    await forwardRequest(request, reply, runtime, {
      destination: { host: destinationHost, port: destinationPort },
      scheme: 'https',
      pathAndQuery: request.url,
      applyMaxForwards: false
    })
    return reply
  })
  app.addHook('onClose', async () => { await Promise.all([runtime.dispatcher.destroy(), runtime.tlsDispatcher.destroy()]) })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  return { app, url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` }
}

import type { Http2SecureServer } from 'node:http2'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import { secondaryServersOf } from '../attach-server'
import { proxyClientErrorHandler } from '../diagnostics/client-error-handler'
import { proxyFrameworkErrors } from '../diagnostics/framework-errors'
import type { ListenerConfig } from './config'
import { http2ServerOptions, prepareHttp2Server } from './http2-listener'
import type { ListenerTlsFiles } from './listener-tls'
import { HTTP2_SESSION_TIMEOUT, SERVER_TIMEOUTS, TLS_HANDSHAKE_TIMEOUT } from './server-timeouts'
import { proxyLoggerOptions } from './logger-options'
import type { ProxyServerConfig } from './config'

/**
 * Creates the Fastify app of the bundled server, with `GET /healthz`. Its own server is the
 * first listener's: HTTP/1.1, HTTPS, or (with `http2`) an HTTP/2 TLS server that also speaks
 * HTTP/1.1. With `http2` the app's raw request and reply are Node's HTTP/2 compatibility
 * objects at run time, though the returned type keeps Fastify's HTTP/1.1 defaults.
 */
export function createProxyApp (first: ListenerConfig, files: ListenerTlsFiles | undefined, config: Pick<ProxyServerConfig, 'log' | 'headers'>): FastifyInstance {
  const common = { ...proxyLoggerOptions(config.log, config.headers), clientErrorHandler: proxyClientErrorHandler }
  const http2 = first.http2 === true && files !== undefined
  const app = http2
    ? Fastify({ ...common, frameworkErrors: proxyFrameworkErrors as unknown as FastifyServerOptions<Http2SecureServer>['frameworkErrors'], http2: true, https: http2ServerOptions(files), http2SessionTimeout: HTTP2_SESSION_TIMEOUT }) as unknown as FastifyInstance
    : Fastify({
      ...common,
      frameworkErrors: proxyFrameworkErrors,
      keepAliveTimeout: SERVER_TIMEOUTS.keepAliveTimeout,
      requestTimeout: SERVER_TIMEOUTS.requestTimeout,
      ...(files === undefined ? { http: { headersTimeout: SERVER_TIMEOUTS.headersTimeout } } : { https: { ...files, headersTimeout: SERVER_TIMEOUTS.headersTimeout, handshakeTimeout: TLS_HANDSHAKE_TIMEOUT } })
    })
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

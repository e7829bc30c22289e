import { createServer as createHttpServer, type Server as HttpServer } from 'node:http'
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import Fastify, { type FastifyInstance } from 'fastify'
import { forwardProxy } from '../plugin'
import { secondaryServersOf } from '../attach-server'
import type { ForwardProxyOptions } from '../../types/options'
import { proxyClientErrorHandler } from '../diagnostics/client-error-handler'
import type { ListenerConfig, ProxyServerConfig } from './config'
import { SERVER_TIMEOUTS } from './server-timeouts'
import { loadListenerTls } from './listener-tls'

/** A running proxy server. */
export interface RunningProxyServer {
  readonly app: FastifyInstance
  /** One URL per listener, with the port actually bound (`http://127.0.0.1:8080`). */
  readonly urls: string[]
  /** One Node server per listener, in configuration order; the first is `app.server`. */
  readonly servers: Array<HttpServer | HttpsServer>
  /**
   * Stops accepting, closes open tunnels, lets in-flight requests finish for the shutdown grace
   * period, then closes every remaining connection and listener.
   */
  close (): Promise<void>
}

/** How long `close()` lets in-flight requests finish before cutting their connections (ms). */
export const DEFAULT_SHUTDOWN_GRACE_PERIOD = 10_000

/** Options of {@link startProxyServer} that are not part of the configuration file. */
export interface StartOptions {
  /**
   * Milliseconds `close()` waits for in-flight requests (a long download, a server-sent event
   * stream) before it closes their connections. Default {@link DEFAULT_SHUTDOWN_GRACE_PERIOD}.
   */
  readonly shutdownGracePeriod?: number
}

/** Maps the configuration file onto the plugin's options. */
export function pluginOptionsFromConfig (config: ProxyServerConfig): ForwardProxyOptions {
  return {
    ...(config.users === undefined ? {} : { auth: { users: config.users } }),
    ...(config.destinations === undefined ? {} : { destinations: config.destinations }),
    ...(config.limits === undefined ? {} : { limits: config.limits })
  }
}

/**
 * Starts the ready-to-run proxy: one Fastify app with the forward proxy and `GET /healthz`,
 * serving every configured listener (the first is Fastify's own server, the others are joined
 * with `forwardProxy.attachServer`).
 */
export async function startProxyServer (config: ProxyServerConfig, options: StartOptions = {}): Promise<RunningProxyServer> {
  const gracePeriod = options.shutdownGracePeriod ?? DEFAULT_SHUTDOWN_GRACE_PERIOD
  const [first, ...others] = config.listen
  if (first === undefined) throw new Error('at least one listener is required')
  // Every certificate is checked before anything listens.
  const tlsFiles = config.listen.map((listener, index) => listener.tls === undefined ? undefined : loadListenerTls(listener.tls, index))
  const firstTls = tlsFiles[0]
  const app = Fastify({
    logger: { level: config.log.level },
    clientErrorHandler: proxyClientErrorHandler,
    keepAliveTimeout: SERVER_TIMEOUTS.keepAliveTimeout,
    requestTimeout: SERVER_TIMEOUTS.requestTimeout,
    ...(firstTls === undefined ? { http: { headersTimeout: SERVER_TIMEOUTS.headersTimeout } } : { https: { ...firstTls, headersTimeout: SERVER_TIMEOUTS.headersTimeout } })
  })
  // Fastify gives clientErrorHandler to its main server only, not to the servers it binds for
  // the other addresses of a name such as `localhost`.
  app.addHook('onListen', async function proxyClientErrorsOnSecondaryBindings () {
    for (const server of secondaryServersOf(app)) {
      if (server.listenerCount('clientError') === 0) server.on('clientError', proxyClientErrorHandler)
    }
  })
  app.get('/healthz', async () => ({ status: 'ok' }))
  await app.register(forwardProxy, pluginOptionsFromConfig(config))

  const extraServers: Array<HttpServer | HttpsServer> = []
  const close = async (): Promise<void> => {
    // Stop accepting first, but await the extra servers only after app.close(): their close
    // waits for every socket, tunnels included, and app.close() is what ends the tunnels.
    const extraClosed = extraServers.map((server) => new Promise<void>((resolve) => {
      if (!server.listening) { resolve(); return }
      server.close(() => resolve())
      server.closeIdleConnections()
    }))
    // Fastify only closes idle connections; a response still streaming would hold close() forever.
    const cut = setTimeout(() => {
      for (const server of [app.server, ...secondaryServersOf(app), ...extraServers]) if ('closeAllConnections' in server) server.closeAllConnections()
    }, gracePeriod)
    try {
      await app.close()
      for (const server of extraServers) server.closeAllConnections()
      await Promise.all(extraClosed)
    } finally {
      clearTimeout(cut)
    }
  }
  try {
    await app.listen({ host: first.host, port: first.port })
    const urls = [listenerUrl(first, app.server.address() as AddressInfo)]
    for (const [i, listener] of others.entries()) {
      const files = tlsFiles[i + 1]
      const server = files === undefined ? createHttpServer(SERVER_TIMEOUTS) : createHttpsServer({ ...files, ...SERVER_TIMEOUTS })
      server.on('clientError', proxyClientErrorHandler)
      app.forwardProxy.attachServer(server)
      extraServers.push(server)
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen(listener.port, listener.host, () => { server.removeListener('error', reject); resolve() })
      })
      urls.push(listenerUrl(listener, server.address() as AddressInfo))
    }
    return { app, urls, servers: [app.server, ...extraServers], close }
  } catch (error) {
    await close()
    throw error
  }
}

function listenerUrl (listener: ListenerConfig, address: AddressInfo): string {
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return `${listener.tls === undefined ? 'http' : 'https'}://${host}:${address.port}`
}

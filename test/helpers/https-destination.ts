import { createServer, type Server, type ServerOptions } from 'node:https'
import type { AddressInfo } from 'node:net'
import type { ConnectionOptions, TLSSocket } from 'node:tls'
import Fastify, { type FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { ProxyAgent, request, type Dispatcher } from 'undici'
import { createCaCertificateProvider, forwardProxy, tlsInterception, type ForwardProxyOptions, type TlsInterceptionOptions } from '../../lib/index'
import { makeInterceptionPki, type InterceptionPki } from './interception-pki'
import { LOOPBACK_TEST_POLICY } from './servers'
import { logAccepts, type AcceptLog } from './nothing-dialed'

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
  /** The connections it accepted, in order (to prove that nothing dialed it before a probe). */
  accepts: AcceptLog
}

/** Starts an HTTPS origin on `host` (default 127.0.0.1), any port, answering `ok <path>`; closed at teardown. */
export async function startHttpsOrigin (t: Test, options: ServerOptions, host = '127.0.0.1'): Promise<HttpsOrigin> {
  const requests: HttpsOriginRequest[] = []
  const server = createServer(options, (req, res) => {
    const socket = req.socket as TLSSocket
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, alpn: socket.alpnProtocol, servername: socket.servername })
    res.setHeader('content-type', 'text/plain')
    res.end(`ok ${req.url ?? ''}`)
  })
  server.on('tlsClientError', () => {})
  const accepts = logAccepts(server, 'requests')
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return { server, port: (server.address() as AddressInfo).port, requests, accepts }
}

/** The real intercepted path toward one HTTPS destination, and a client that uses it. */
export interface InterceptedPath {
  /** The Fastify app with forwardProxy and tlsInterception. */
  app: FastifyInstance
  /**
   * Sends `GET <path>` (or `options`) to `https://<destinationHost>:<port><path>` through the
   * proxy: a CONNECT the proxy intercepts, TLS to the proxy's leaf inside, the request there;
   * the proxy forwards it to the destination over TLS with the interception's settings.
   */
  request (path: string, options?: { method?: Dispatcher.HttpMethod, headers?: Record<string, string> }): Promise<Dispatcher.ResponseData>
  /** The interception PKI: its operator CA signs the leaves the client sees. */
  pki: InterceptionPki
}

/**
 * Starts a proxy with tlsInterception that intercepts every tunnel (leaves minted by the library's
 * CA provider from a test operator CA, for whatever host the client names, checked by host name), with `interception` as the interception options (the
 * destination TLS settings among them) and `proxy` as the forwardProxy options (loopback
 * destinations allowed unless overridden); `clientTls` adds to the client's TLS options toward
 * the proxy's leaf. Closed at teardown.
 */
export async function startInterceptedPath (
  t: Test,
  destinationPort: number,
  interception: TlsInterceptionOptions = {},
  proxy: ForwardProxyOptions = {},
  destinationHost = '127.0.0.1',
  clientTls: ConnectionOptions = {}
): Promise<InterceptedPath> {
  const pki = await makeInterceptionPki(t)
  const app = Fastify({ logger: false })
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY, ...proxy })
  await app.register(tlsInterception, {
    certificateProvider: createCaCertificateProvider({ cert: pki.operatorCa.cert, key: pki.operatorCa.key }),
    selector: { shouldIntercept: () => true },
    ...interception
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const agent = new ProxyAgent({ uri: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, requestTls: { ca: pki.operatorCa.cert, ...clientTls } })
  t.teardown(async () => { await agent.close(); await app.close() })
  const authority = `${destinationHost}:${destinationPort}`
  return {
    app,
    pki,
    request: async (path, options = {}) => await request(`https://${authority}${path}`, { dispatcher: agent, method: options.method ?? 'GET', headers: options.headers ?? {} })
  }
}

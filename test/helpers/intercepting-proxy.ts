import { createServer as createHttpsServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import type { TLSSocket } from 'node:tls'
import type { IncomingMessage, ServerResponse } from 'node:http'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { Test } from 'tap'
import { forwardProxy, tlsInterception, type ForwardProxyCertificateProvider, type ForwardProxyOptions, type TlsInterceptionOptions } from '../../lib/index'
import { LOOPBACK_TEST_POLICY } from './servers'
import type { InterceptionPki } from './interception-pki'
import { logAccepts, type AcceptLog } from './nothing-dialed'

/** What the HTTPS origin saw of one request. */
export interface SeenRequest {
  method: string
  url: string
  httpVersion: string
  headers: Record<string, string | string[] | undefined>
  /** Names and values as received, in order. */
  rawHeaders: string[]
  body: string
}

/** A started HTTPS origin with the destination CA's leaf, on 127.0.0.1. */
export interface TlsOrigin {
  server: Server
  port: number
  requests: SeenRequest[]
  /** The connections it accepted, in order (to prove that nothing dialed it before a probe). */
  accepts: AcceptLog
}

/**
 * Starts an HTTPS origin on 127.0.0.1:0 (certificate from the destination CA) that answers
 * every request with a JSON echo of what it saw, unless `handler` answers. Closed at teardown.
 */
export async function startTlsOrigin (
  t: Test,
  pki: InterceptionPki,
  handler?: (req: IncomingMessage, res: ServerResponse, body: string) => void
): Promise<TlsOrigin> {
  const requests: SeenRequest[] = []
  const server = createHttpsServer({ cert: pki.originLeaf.cert, key: pki.originLeaf.key }, (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const seen = { method: req.method ?? '', url: req.url ?? '', httpVersion: req.httpVersion, headers: req.headers, rawHeaders: req.rawHeaders, body: Buffer.concat(chunks).toString() }
      requests.push(seen)
      if (handler !== undefined) return handler(req, res, seen.body)
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ ...seen, alpn: (req.socket as TLSSocket).alpnProtocol }))
    })
  })
  server.on('tlsClientError', () => {})
  const accepts = logAccepts(server, 'requests')
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return { server, port: (server.address() as AddressInfo).port, requests, accepts }
}

/** A certificate provider that hands out the test leaf (127.0.0.1, localhost) and records what it was asked for. */
export function staticProvider (pki: InterceptionPki): ForwardProxyCertificateProvider & { asked: string[] } {
  const certificate = { cert: pki.interceptionLeaf.cert, key: pki.interceptionLeaf.key }
  const asked: string[] = []
  return {
    asked,
    getCertificate (destination) {
      asked.push(`${destination.host}:${destination.port}`)
      return certificate
    }
  }
}

/** Interception options that intercept every tunnel, presenting the test leaf from {@link staticProvider}. */
export function interceptAll (pki: InterceptionPki): { certificateProvider: ReturnType<typeof staticProvider>, selector: { shouldIntercept: () => boolean } } {
  return { certificateProvider: staticProvider(pki), selector: { shouldIntercept: () => true } }
}

/** A started proxy with tlsInterception. */
export interface InterceptingProxy {
  app: FastifyInstance
  port: number
  /** `http://127.0.0.1:<port>` */
  url: string
}

/** How {@link startInterceptingProxy} builds the app. */
export interface InterceptingProxySetup {
  proxy?: ForwardProxyOptions
  /** Options of tlsInterception; `trustedDestinationCa` defaults to the test destination CA. */
  interception?: TlsInterceptionOptions
  /** Runs before the plugins are registered (the application's hooks and routes). */
  setup?: (app: FastifyInstance) => void
  server?: FastifyServerOptions
  /** Listen backlog, for tests that open many connections at once (Node's default is 511). */
  backlog?: number
}

/**
 * Starts a Fastify app on 127.0.0.1:0 with forwardProxy (loopback destinations allowed) and
 * tlsInterception trusting the test destination CA. Closed at teardown.
 */
export async function startInterceptingProxy (t: Test, pki: InterceptionPki, options: InterceptingProxySetup = {}): Promise<InterceptingProxy> {
  const app = Fastify({ logger: false, ...options.server })
  options.setup?.(app)
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY, ...options.proxy })
  await app.register(tlsInterception, { trustedDestinationCa: pki.destinationCa.cert, ...options.interception })
  await app.listen({ port: 0, host: '127.0.0.1', ...(options.backlog === undefined ? {} : { backlog: options.backlog }) })
  t.teardown(() => app.close())
  const port = (app.server.address() as AddressInfo).port
  return { app, port, url: `http://127.0.0.1:${port}` }
}

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { Test } from 'tap'
import { forwardProxy, type ForwardProxyOptions, type ForwardProxyResolver } from '../../lib/index'
import { logAccepts, type AcceptLog } from './nothing-dialed'

/** What the echo origin saw of one request. */
export interface EchoedRequest {
  method: string
  url: string
  headers: Record<string, string | string[] | undefined>
  rawHeaders: string[]
  body: string
}

/** A started HTTP origin on loopback. */
export interface Origin {
  server: Server
  port: number
  /** Every request the origin received, in order. */
  requests: EchoedRequest[]
  /** The connections it accepted, in order (to prove that nothing dialed it before a probe). */
  accepts: AcceptLog
}

/**
 * Starts an HTTP origin on 127.0.0.1 that answers every request with a JSON echo of what it
 * saw (method, raw url, headers, body), unless `handler` answers instead. Closed at teardown.
 */
export async function startOrigin (t: Test, handler?: (req: IncomingMessage, res: ServerResponse, body: string) => void, host = '127.0.0.1'): Promise<Origin> {
  const requests: EchoedRequest[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString()
      const echoed = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, rawHeaders: req.rawHeaders, body }
      requests.push(echoed)
      if (handler !== undefined) return handler(req, res, body)
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify(echoed))
    })
  })
  const accepts = logAccepts(server, 'requests')
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return { server, port: (server.address() as AddressInfo).port, requests, accepts }
}

/** A TCP listener that records every connection it gets (to prove nothing was forwarded). */
export interface Sentinel {
  port: number
  connections: Socket[]
  /** The connections it accepted, in order, with their bytes (to prove that nothing dialed it before a probe). */
  accepts: AcceptLog
}

/** Starts a raw TCP sentinel on `host` (default 127.0.0.1); it reads what it gets and never answers. */
export async function startSentinel (t: Test, host = '127.0.0.1', port = 0): Promise<Sentinel> {
  const connections: Socket[] = []
  const server: NetServer = createNetServer((socket) => { connections.push(socket); socket.on('error', () => {}) })
  const accepts = logAccepts(server, 'bytes')
  await new Promise<void>((resolve) => server.listen(port, host, resolve))
  t.teardown(() => new Promise<void>((resolve) => { for (const s of connections) s.destroy(); server.close(() => resolve()) }))
  return { port: (server.address() as AddressInfo).port, connections, accepts }
}

/** Proxy options for tests: loopback destinations on any port are allowed unless overridden. */
export const LOOPBACK_TEST_POLICY: ForwardProxyOptions['destinations'] = { allowPrivateNetworks: true, allowedPorts: '*' }

/** A resolver that answers 127.0.0.1 for every name: test host names lead to the loopback origins. */
export const resolveToLoopback: ForwardProxyResolver = async () => [{ address: '127.0.0.1', family: 4 }]

/**
 * Registers forwardProxy with `options` on a throwaway Fastify app and returns what registration
 * threw (undefined when it registered); the app is closed either way.
 */
export async function registrationError (options: unknown): Promise<unknown> {
  const app = Fastify()
  try {
    await app.register(forwardProxy, options as ForwardProxyOptions)
    await app.ready()
    return undefined
  } catch (error) {
    return error
  } finally {
    await app.close()
  }
}

/** A started proxy. */
export interface Proxy {
  app: FastifyInstance
  port: number
  /** `http://127.0.0.1:<port>` */
  url: string
}

/**
 * Starts a Fastify app with the forward proxy on 127.0.0.1:0. `setup` runs before the plugin
 * is registered (to add the app's own routes and hooks). Closed at teardown.
 */
export async function startProxy (
  t: Test,
  options: ForwardProxyOptions = {},
  setup?: (app: FastifyInstance) => void,
  serverOptions: FastifyServerOptions = {}
): Promise<Proxy> {
  const app = Fastify({ logger: false, ...serverOptions })
  setup?.(app)
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY, ...options })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const port = (app.server.address() as AddressInfo).port
  return { app, port, url: `http://127.0.0.1:${port}` }
}

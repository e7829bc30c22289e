import { connect, type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2'
import type { AddressInfo, Socket } from 'node:net'
import Fastify, { type FastifyInstance } from 'fastify'
import type { Writable } from 'node:stream'
import type { Test } from 'tap'
import { forwardProxy } from '../../lib'
import type { ForwardProxyOptions } from '../../types/options'
import { LOOPBACK_TEST_POLICY } from './servers'
import { makeSelfSignedCertificate, type TlsFixture } from './tls-fixture'
import { connectedSession } from './http2-session'
import { startTcpDestination, type TcpDestination } from './tcp-destination'

/** A started proxy on an HTTP/2 TLS server that also speaks HTTP/1.1. */
export interface Http2Proxy {
  app: FastifyInstance
  port: number
  /** `https://127.0.0.1:<port>` */
  url: string
  /** The proxy's self-signed certificate, to trust in clients. */
  tls: TlsFixture
}

/**
 * Starts a Fastify app created with `http2: true` and `https: { allowHTTP1: true }` on
 * 127.0.0.1:0 with the forward proxy registered. `setup` runs before the plugin; `logger` is
 * Fastify's (none by default). Closed at teardown.
 */
export async function startHttp2Proxy (
  t: Test,
  options: ForwardProxyOptions = {},
  setup?: (app: FastifyInstance) => void,
  http2Settings: Record<string, unknown> = {},
  logger: false | { level: string, stream: Writable } = false
): Promise<Http2Proxy> {
  const tls = await makeSelfSignedCertificate(t.testdir())
  const app = Fastify({
    logger,
    http2: true,
    https: { allowHTTP1: true, key: tls.key, cert: tls.cert, ...http2Settings }
  }) as unknown as FastifyInstance
  setup?.(app)
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY, ...options })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const port = (app.server.address() as AddressInfo).port
  return { app, port, url: `https://127.0.0.1:${port}`, tls }
}

/** Opens an HTTP/2 session to the proxy, trusting its certificate; closed at teardown. */
export async function connectHttp2 (t: Test, proxy: Http2Proxy): Promise<ClientHttp2Session> {
  return await connectedSession(t, connect(proxy.url, { ca: proxy.tls.cert }))
}

/** An HTTP/2 CONNECT stream and the response head the proxy gave it. */
export interface Http2Tunnel {
  stream: ClientHttp2Stream
  headers: IncomingHttpHeaders
  status: number
  /** The response body (for refusals), read to the end. */
  body (): Promise<string>
}

/**
 * Sends `:method CONNECT` for `authority` on the session and waits for the response head.
 * Rejects when the stream closes first, with the stream's RST_STREAM code as `rstCode`.
 */
export function openHttp2Tunnel (session: ClientHttp2Session, authority: string, headers: OutgoingHttpHeaders = {}): Promise<Http2Tunnel> {
  const stream = session.request({ ':method': 'CONNECT', ':authority': authority, ...headers })
  stream.on('error', () => {})
  return new Promise((resolve, reject) => {
    stream.once('response', (head) => {
      resolve({
        stream,
        headers: head,
        status: Number(head[':status']),
        body: () => new Promise((resolve) => {
          let text = ''
          stream.setEncoding('utf8')
          stream.on('data', (chunk: string) => { text += chunk })
          stream.once('end', () => resolve(text))
          stream.once('close', () => resolve(text))
        })
      })
    })
    stream.once('close', () => reject(Object.assign(new Error(`stream closed before a response (code ${String(stream.rstCode)})`), { rstCode: stream.rstCode })))
  })
}

/** An HTTP/2 proxy with a client session open to it, and a TCP destination behind it. */
export interface Http2TunnelRig {
  proxy: Http2Proxy
  session: ClientHttp2Session
  destination: TcpDestination
  /** `127.0.0.1:<destination port>` */
  target: string
  /**
   * Opens a CONNECT tunnel to the destination on the session; resolves once the proxy has
   * answered 200 and the destination has accepted the proxy's connection (`upstream`), rejects
   * with the answer otherwise.
   */
  open (headers?: OutgoingHttpHeaders): Promise<{ tunnel: Http2Tunnel, upstream: Socket }>
}

/** Starts a TCP destination and an HTTP/2 proxy with `options`, and connects a session to it; all closed at teardown. */
export async function startHttp2TunnelRig (t: Test, options: ForwardProxyOptions = {}): Promise<Http2TunnelRig> {
  const destination = await startTcpDestination(t)
  const proxy = await startHttp2Proxy(t, options)
  const session = await connectHttp2(t, proxy)
  const target = `127.0.0.1:${destination.port}`
  return {
    proxy,
    session,
    destination,
    target,
    async open (headers = {}) {
      const tunnel = await openHttp2Tunnel(session, target, headers)
      if (tunnel.status !== 200) throw new Error(`CONNECT ${target} answered ${tunnel.status}: ${String(tunnel.headers['proxy-status'])}`)
      return { tunnel, upstream: await destination.nextConnection() }
    }
  }
}

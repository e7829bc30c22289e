// A CONNECT's target is `host:port`, which Fastify's router does not take as a path (find-my-way
// 9.10.2 answers it with its own 400 FST_ERR_BAD_URL before any hook runs). The proxy routes
// every CONNECT under the fixed path `/`: application hooks see `request.url === '/'`, the target
// as received in `request.originalUrl` and the parsed one in `request.proxyDestination`, and the
// application's own routes on `/` never get it.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { test } from 'tap'
import type { ForwardProxyDestination } from '../types/destination'
import { connectHttp2, openHttp2Tunnel, startHttp2Proxy } from './helpers/http2-proxy'
import { openTunnel, rawExchange } from './helpers/raw-client'
import { startSentinel, startProxy } from './helpers/servers'
import { echoesThrough, startTcpDestination } from './helpers/tcp-destination'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

/** What an application's onRequest hook saw of a request. */
interface SeenByHook {
  method: string
  url: string
  originalUrl: string
  destination: ForwardProxyDestination | null
}

/** Adds an onRequest hook that records every request, and routes of the app's own on `/` (GET and CONNECT). */
function appWithHookAndRootRoutes (seen: SeenByHook[]) {
  return (app: FastifyInstance): void => {
    app.addHook('onRequest', async (request: FastifyRequest) => {
      seen.push({ method: request.method, url: request.url, originalUrl: request.originalUrl, destination: request.proxyDestination })
    })
    app.get('/', async () => 'the application')
    app.addHttpMethod('CONNECT')
    app.route({ method: 'CONNECT', url: '/', handler: async () => 'the application' })
  }
}

test('CONNECT over HTTP/1.1 is routed under "/" whatever the router makes of host:port: the tunnel opens, hooks see url "/" and the target as originalUrl, the app\'s own "/" routes never get it', async (t) => {
  const destination = await startTcpDestination(t)
  const seen: SeenByHook[] = []
  const proxy = await startProxy(t, {}, appWithHookAndRootRoutes(seen))
  const target = `127.0.0.1:${destination.port}`

  const tunnel = await openTunnel(proxy.port, target)
  if (!t.equal(tunnel.status, 200, tunnel.head)) return
  await echoesThrough(tunnel.socket, await destination.nextConnection(), 'through the tunnel')
  tunnel.socket.destroy()
  t.same(seen, [{ method: 'CONNECT', url: '/', originalUrl: target, destination: { host: '127.0.0.1', port: destination.port } }])

  const own = await rawExchange(proxy.port, 'GET / HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n')
  t.match(own.text, /\r\n\r\nthe application$/, 'an origin-form request still reaches the app\'s own route')
})

test('CONNECT targets a router would refuse as URLs get the proxy\'s own 400 with Proxy-Status (not the framework\'s bad-URL answer), and nothing is dialed', async (t) => {
  const sentinel = await startSentinel(t)
  const seen: SeenByHook[] = []
  // No frameworkErrors handler: the plain application a user writes.
  const proxy = await startProxy(t, {}, appWithHookAndRootRoutes(seen))
  for (const target of [`%zz:${sentinel.port}`, '/admin', '*', `127.0.0.1:${sentinel.port}/path`, 'example.com']) {
    const answer = await rawExchange(proxy.port, `CONNECT ${target} HTTP/1.1\r\nHost: x\r\n\r\n`)
    t.equal(answer.status, 400, target)
    t.match(answer.text, /\r\nproxy-status: fastify-forward-proxy; error=http_request_error/i, target)
    t.notMatch(answer.text, /FST_ERR_BAD_URL|the application/, target)
  }
  t.same(seen.map((request) => [request.url, request.originalUrl]), [['/', `%zz:${sentinel.port}`], ['/', '/admin'], ['/', '*'], ['/', `127.0.0.1:${sentinel.port}/path`], ['/', 'example.com']], 'each went through the hooks, routed under "/"')
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing dialed')
})

test('CONNECT over HTTP/2 is routed under "/" as well: the tunnel opens and hooks see url "/" and the :authority as originalUrl', async (t) => {
  const destination = await startTcpDestination(t)
  const seen: SeenByHook[] = []
  const proxy = await startHttp2Proxy(t, {}, appWithHookAndRootRoutes(seen))
  const session = await connectHttp2(t, proxy)
  const target = `127.0.0.1:${destination.port}`

  const tunnel = await openHttp2Tunnel(session, target)
  if (!t.equal(tunnel.status, 200)) return
  const upstream = await destination.nextConnection()
  upstream.write('hello from the destination')
  const first = await new Promise<string>((resolve) => tunnel.stream.once('data', (chunk: Buffer) => resolve(chunk.toString())))
  t.equal(first, 'hello from the destination')
  tunnel.stream.close()
  t.same(seen, [{ method: 'CONNECT', url: '/', originalUrl: target, destination: { host: '127.0.0.1', port: destination.port } }])
})

test('an application\'s rewriteUrl does not take CONNECT away from the proxy: it is called with url "/" and the tunnel still opens to the target as received', async (t) => {
  const destination = await startTcpDestination(t)
  const rewritten: string[] = []
  const proxy = await startProxy(t, {}, undefined, {
    rewriteUrl: (request) => {
      rewritten.push(request.url ?? '')
      return request.url === '/' ? '/elsewhere' : request.url ?? '/'
    }
  })
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  if (!t.equal(tunnel.status, 200, tunnel.head)) return
  await echoesThrough(tunnel.socket, await destination.nextConnection(), 'through the tunnel')
  tunnel.socket.destroy()
  t.same(rewritten, ['/'])
})

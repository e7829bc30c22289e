import { test } from 'tap'
import { connect as tlsConnect } from 'node:tls'
import { createSocket } from 'node:dgram'
import dns from 'node:dns'
import Fastify from 'fastify'
import { forwardProxy } from '../lib/index'
import { LOOPBACK_TEST_POLICY, startOrigin, startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { once, startTcpDestination } from './helpers/tcp-destination'

test('SPEC 4.1 on TLS: HTTP/1.1 CONNECT through a TLS (HTTPS proxy) Fastify server opens a tunnel', async (t) => {
  const origin = await startOrigin(t)
  const tls = await makeSelfSignedCertificate(t.testdir())
  const app = Fastify({ https: { cert: tls.cert, key: tls.key } })
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const port = (app.server.address() as { port: number }).port
  const text = await new Promise<string>((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca: tls.cert }, () => {
      socket.write(`CONNECT 127.0.0.1:${origin.port} HTTP/1.1\r\nHost: x\r\n\r\nGET /through-tls HTTP/1.1\r\nHost: o\r\nConnection: close\r\n\r\n`)
    })
    let received = ''
    socket.on('data', (chunk: Buffer) => { received += chunk.toString() })
    socket.on('error', reject)
    socket.on('close', () => resolve(received))
  })
  t.match(text, /^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 OK/)
  t.equal(origin.requests[0]?.url, '/through-tls')
})

test('Fastify listening on localhost: CONNECT works on every address it binds (secondary servers included)', async (t) => {
  // This machine's resolver gives localhost only 127.0.0.1; Fastify binds one server per
  // address dns.lookup returns, so answer both loopback addresses while it listens.
  const realLookup = dns.lookup
  const bothLoopbacks = (...args: unknown[]): void => {
    const [host, options] = args
    const callback = args[args.length - 1] as (error: null, addresses: Array<{ address: string, family: number }>) => void
    if (host === 'localhost' && typeof options === 'object' && options !== null && (options as { all?: boolean }).all === true) {
      callback(null, [{ address: '127.0.0.1', family: 4 }, { address: '::1', family: 6 }])
      return
    }
    Reflect.apply(realLookup, dns, args)
  }
  Object.assign(dns, { lookup: bothLoopbacks })
  const origin = await startOrigin(t)
  const app = Fastify()
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY })
  try {
    await app.listen({ port: 0, host: 'localhost' })
  } finally {
    Object.assign(dns, { lookup: realLookup })
  }
  t.teardown(() => app.close())
  const port = (app.server.address() as { port: number }).port
  const addresses = app.addresses().map((info) => (typeof info === 'string' ? info : info.address))
  t.same(addresses.sort(), ['127.0.0.1', '::1'], 'a main and a secondary server')
  for (const address of addresses) {
    const tunnel = await openTunnel(port, `127.0.0.1:${origin.port}`, {}, address)
    t.equal(tunnel.status, 200, `CONNECT via ${address}`)
    tunnel.socket.destroy()
  }
})

test('app.close() with an open tunnel completes and closes the tunnel on both sides', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t)
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  const upstream = await destination.nextConnection()
  const clientClosed = once(tunnel.socket, 'close')
  const upstreamEnded = once(upstream, 'end')
  tunnel.socket.resume()
  await proxy.app.close()
  await Promise.all([clientClosed, upstreamEnded])
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

test('SPEC 4.1.7: HTTP/3 is not served: nothing holds the proxy port on UDP and no response advertises Alt-Svc', async (t) => {
  const proxy = await startProxy(t, {}, (app) => { app.get('/healthz', async () => 'ok') })
  const udp = createSocket('udp4')
  t.teardown(() => udp.close())
  await new Promise<void>((resolve, reject) => { udp.once('error', reject); udp.bind(proxy.port, '127.0.0.1', () => resolve()) })
  t.pass('a UDP socket can bind the proxy port: no QUIC listener is there')
  const res = await fetch(`${proxy.url}/healthz`)
  t.equal(res.headers.get('alt-svc'), null)
})

import { test } from 'tap'
import { startProxy } from './helpers/servers'
import { openTunnel, rawExchange } from './helpers/raw-client'
import { connectHttp2, openHttp2Tunnel, startHttp2Proxy } from './helpers/http2-proxy'
import { portOf, startConfiguredServer } from './helpers/cli-server'
import { OwnListeners } from './helpers/internals'

const LOOP = /\r\nproxy-status: fastify-forward-proxy; error=proxy_loop_detected; details="the destination is this proxy"\r\n/i

test('CONNECT and http:// requests to the proxy\'s own listener get 508 proxy_loop_detected even where loopback is allowed; no tunnel is held', async (t) => {
  const proxy = await startProxy(t, { resolver: async () => [{ address: '127.0.0.1', family: 4 }] })
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${proxy.port}`)
  t.equal(tunnel.status, 508, 'CONNECT to itself')
  t.match(`${tunnel.head}\r\n`, LOOP)
  await new Promise((resolve) => tunnel.socket.once('close', resolve))
  const named = await openTunnel(proxy.port, `proxy-itself.example:${proxy.port}`)
  t.equal(named.status, 508, 'a name resolving to the proxy is judged on its address')
  named.socket.destroy()
  const forwarded = await rawExchange(proxy.port, `GET http://127.0.0.1:${proxy.port}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  t.equal(forwarded.status, 508, 'http:// to itself')
  t.match(forwarded.text, LOOP)
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

test('over HTTP/2: a CONNECT stream to the proxy\'s own port gets 508 and the session goes on', async (t) => {
  const proxy = await startHttp2Proxy(t)
  const session = await connectHttp2(t, proxy)
  const loop = await openHttp2Tunnel(session, `127.0.0.1:${proxy.port}`)
  t.equal(loop.status, 508)
  t.match(loop.headers['proxy-status'], /error=proxy_loop_detected/)
  t.notOk(session.destroyed, 'the session goes on')
})

test('in the ready-to-run server: a CONNECT through one listener to another listener of the same server gets 508', async (t) => {
  const listener = { host: '127.0.0.1', port: 0 }
  const server = await startConfiguredServer(t, { listen: [listener, listener], destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' } })
  const second = portOf(server.urls[1])
  const tunnel = await openTunnel(portOf(server.urls[0]), `127.0.0.1:${second}`)
  t.equal(tunnel.status, 508)
  tunnel.socket.destroy()
})

test('a listener on an unspecified address (0.0.0.0, ::) is reached through loopback, this host\'s addresses and IPv4-mapped spellings', async (t) => {
  const own = new OwnListeners()
  own.add({ address: () => ({ address: '0.0.0.0', port: 8080, family: 'IPv4' }) })
  own.add({ address: () => ({ address: '127.0.0.1', port: 3128, family: 'IPv4' }) })
  own.add({ address: () => null })
  t.ok(own.includes('127.0.0.1', 8080))
  t.ok(own.includes('127.8.9.10', 8080), 'all of 127.0.0.0/8 is this host')
  t.ok(own.includes('::ffff:127.0.0.1', 3128), 'IPv4-mapped spelling')
  t.ok(own.includes('0.0.0.0', 8080), '0.0.0.0 dials this host')
  t.notOk(own.includes('127.0.0.1', 8081), 'another port is not the proxy')
  t.notOk(own.includes('127.0.0.2', 3128), 'a listener on one address is not reached on another')
  t.notOk(own.includes('192.0.2.1', 8080), 'a remote address is not this host')
})

import { test, type Test } from 'tap'
import { connect, createServer, type Socket } from 'node:net'
import type { TLSSocket } from 'node:tls'
import type { AddressInfo } from 'node:net'
import { TunnelSetups, tunnelSetups } from './helpers/internals'
import { makeInterceptionPki, type InterceptionPki } from './helpers/interception-pki'
import { interceptAll, startInterceptingProxy, startTlsOrigin } from './helpers/intercepting-proxy'
import { rawTlsExchange, startInnerTls, tunnelTransport } from './helpers/intercepted-client'
import { basic, openTunnel } from './helpers/raw-client'
import { deferred } from './helpers/deferred'
import { LOOPBACK_TEST_POLICY, startOrigin } from './helpers/servers'

// Go's HTTP clients (before Go 1.23) cancel a spare connection they are dialing as soon as the
// request they dialed it for completes on another connection. Through an intercepting proxy that
// dial is a CONNECT and a TLS handshake; a request on an open tunnel is faster, so under load the
// dials never finish and the client opens thousands of tunnels it abandons. While one of a
// client's tunnels to a destination is being set up, its requests on its other intercepted tunnels
// there wait for it (limits.tunnelSetupWait at most), so the new tunnel is ready first.

/** The proxy side of a TCP connection from `localAddress`, for the set-up counts. */
async function serverSocketFrom (t: Test, localAddress: string): Promise<Socket> {
  const accepted = deferred<Socket>()
  const server = createServer((socket) => accepted.resolve(socket))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const client = connect({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', localAddress })
  t.teardown(() => { client.destroy(); server.close() })
  const socket = await accepted.promise
  t.teardown(() => socket.destroy())
  return socket
}

const API = { host: 'api.example', port: 443 }
const OTHER_HOST = { host: 'other.example', port: 443 }
const OTHER_PORT = { host: 'api.example', port: 8443 }

test('a request waits while a tunnel of its client to its destination is being set up, until every one is set up; another client\'s requests and requests to other destinations do not wait', async (t) => {
  const setups = new TunnelSetups()
  t.equal(setups.waitFor('127.0.0.21', API, 60_000), null, 'nothing being set up: no wait')
  const first = await serverSocketFrom(t, '127.0.0.21')
  const second = await serverSocketFrom(t, '127.0.0.21')
  const other = await serverSocketFrom(t, '127.0.0.22')
  setups.begin(first, API)
  setups.begin(second, API)
  setups.begin(other, API)
  setups.begin(first, API)
  t.equal(setups.pendingFor('127.0.0.21', API), 2, 'a socket counts once')
  t.equal(setups.waitFor('127.0.0.21', API, 0), null, 'a wait of 0 turns it off')
  t.equal(setups.waitFor('127.0.0.21', OTHER_HOST, 60_000), null, 'the same client\'s request to another host goes on')
  t.equal(setups.waitFor('127.0.0.21', OTHER_PORT, 60_000), null, 'the same client\'s request to another port of the host goes on')
  const order: string[] = []
  const waiting = setups.waitFor('127.0.0.21', { host: 'api.example', port: 443 }, 60_000)
  if (waiting === null) throw new Error('expected a wait')
  void waiting.then(() => order.push('released'))
  order.push('first set up')
  setups.end(first)
  setups.end(first)
  await new Promise((resolve) => setImmediate(resolve))
  order.push('second set up')
  setups.end(second)
  await waiting
  t.same(order, ['first set up', 'second set up', 'released'], 'released once the last of its client\'s tunnels there is set up')
  t.equal(setups.pendingFor('127.0.0.21', API), 0)
  t.equal(setups.pendingFor('127.0.0.22', API), 1, 'the other client\'s set-up is still counted')
  t.equal(setups.waitFor('127.0.0.21', API, 60_000), null, 'its client\'s requests no longer wait')
})

test('a tunnel whose connection closes is no longer being set up; a set-up that never ends holds a request for the longest wait only', async (t) => {
  const setups = new TunnelSetups()
  const closing = await serverSocketFrom(t, '127.0.0.23')
  setups.begin(closing, API)
  const released = setups.waitFor('127.0.0.23', API, 60_000)
  closing.destroy()
  await released
  t.equal(setups.pendingFor('127.0.0.23', API), 0, 'closing the connection ended the set-up')

  const stalled = await serverSocketFrom(t, '127.0.0.24')
  setups.begin(stalled, API)
  await setups.waitFor('127.0.0.24', API, 20)
  t.equal(setups.pendingFor('127.0.0.24', API), 1, 'the request went on with the set-up still under way')
})

/** A proxy intercepting every tunnel, with the wait long enough that only a set-up's end releases a request. */
async function startWaitingProxy (t: Test, pki: InterceptionPki) {
  return await startInterceptingProxy(t, pki, {
    proxy: { limits: { tunnelSetupWait: 60_000 } },
    interception: interceptAll(pki)
  })
}

/** An intercepted tunnel from `localAddress`, TLS done. */
async function interceptedFrom (t: Test, pki: InterceptionPki, proxyPort: number, target: string, localAddress: string): Promise<TLSSocket> {
  const tunnel = await openTunnel(proxyPort, target, {}, '127.0.0.1', localAddress)
  t.equal(tunnel.status, 200)
  t.teardown(() => { tunnel.socket.destroy() })
  return await startInnerTls(tunnelTransport(tunnel), { ca: pki.operatorCa.cert })
}

test('with limits.tunnelSetupWait, a request inside an intercepted tunnel is forwarded only once the client\'s new tunnel to its destination is set up; another client\'s request and the same client\'s request to another destination go on meanwhile', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const elsewhere = await startTlsOrigin(t, pki)
  const proxy = await startWaitingProxy(t, pki)
  const target = `127.0.0.1:${origin.port}`
  const open = await interceptedFrom(t, pki, proxy.port, target, '127.0.0.31')
  const other = await interceptedFrom(t, pki, proxy.port, target, '127.0.0.32')
  const toElsewhere = await interceptedFrom(t, pki, proxy.port, `127.0.0.1:${elsewhere.port}`, '127.0.0.31')

  const settingUp = await openTunnel(proxy.port, target, {}, '127.0.0.1', '127.0.0.31')
  t.equal(settingUp.status, 200, 'the new tunnel is answered; its TLS handshake has not started')
  t.teardown(() => { settingUp.socket.destroy() })
  t.equal(tunnelSetups.pendingFor('127.0.0.31', { host: '127.0.0.1', port: origin.port }), 1)

  const order: string[] = []
  const held = rawTlsExchange(open, `GET /held HTTP/1.1\r\nHost: ${target}\r\nConnection: close\r\n\r\n`).then((res) => { order.push('held request answered'); return res })
  // Requests sent after it are answered first: the held one was not forwarded.
  const meanwhile = await rawTlsExchange(other, `GET /meanwhile HTTP/1.1\r\nHost: ${target}\r\nConnection: close\r\n\r\n`)
  t.equal(meanwhile.status, 200)
  order.push('other client answered')
  const sameClientElsewhere = await rawTlsExchange(toElsewhere, `GET /elsewhere HTTP/1.1\r\nHost: 127.0.0.1:${elsewhere.port}\r\nConnection: close\r\n\r\n`)
  t.equal(sameClientElsewhere.status, 200)
  order.push('same client, other destination answered')
  t.notOk(origin.requests.some((request) => request.url === '/held'), 'the held request has not reached the destination')

  await startInnerTls(tunnelTransport(settingUp), { ca: pki.operatorCa.cert })
  order.push('new tunnel set up')
  t.equal((await held).status, 200)
  t.same(order, ['other client answered', 'same client, other destination answered', 'new tunnel set up', 'held request answered'])
})

test('a tunnel stops holding its client\'s requests when its CONNECT is refused after admission began, when it is relayed opaquely, and when its TLS handshake is done', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const plain = await startOrigin(t)
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { auth: { users: { alice: 'pw' } }, destinations: { ...LOOPBACK_TEST_POLICY, deniedHosts: ['denied.example'] } },
    interception: { ...interceptAll(pki), selector: { shouldIntercept: (_request, destination) => destination.port !== plain.port } }
  })
  const alice = { 'Proxy-Authorization': basic('alice', 'pw') }

  // A host the destination policy denies (nothing is resolved or dialed): refused in admission.
  const refused = await openTunnel(proxy.port, 'denied.example:443', alice, '127.0.0.1', '127.0.0.41')
  t.teardown(() => { refused.socket.destroy() })
  t.equal(refused.status, 403)
  t.equal(tunnelSetups.pendingFor('127.0.0.41', { host: 'denied.example', port: 443 }), 0, 'refused: ended when answered, the connection still open')

  const opaque = await openTunnel(proxy.port, `127.0.0.1:${plain.port}`, alice, '127.0.0.1', '127.0.0.42')
  t.teardown(() => { opaque.socket.destroy() })
  t.equal(opaque.status, 200)
  t.equal(tunnelSetups.pendingFor('127.0.0.42', { host: '127.0.0.1', port: plain.port }), 0, 'opaque: ended with its 200')

  const intercepted = await openTunnel(proxy.port, `127.0.0.1:${origin.port}`, alice, '127.0.0.1', '127.0.0.43')
  t.teardown(() => { intercepted.socket.destroy() })
  t.equal(tunnelSetups.pendingFor('127.0.0.43', { host: '127.0.0.1', port: origin.port }), 1, 'intercepted: still being set up after its 200')
  const secure = await startInnerTls(tunnelTransport(intercepted), { ca: pki.operatorCa.cert })
  // Answered after the proxy read the client's last handshake message.
  const res = await rawTlsExchange(secure, `GET / HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nConnection: close\r\n\r\n`)
  t.equal(res.status, 200)
  t.equal(tunnelSetups.pendingFor('127.0.0.43', { host: '127.0.0.1', port: origin.port }), 0, 'intercepted: ended with its TLS handshake, the tunnel still open')
})

test('with limits.tunnelSetupWait 0, tunnels being set up are not counted', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, { proxy: { limits: { tunnelSetupWait: 0 } }, interception: interceptAll(pki) })
  const intercepted = await openTunnel(proxy.port, `127.0.0.1:${origin.port}`, {}, '127.0.0.1', '127.0.0.51')
  t.teardown(() => { intercepted.socket.destroy() })
  t.equal(intercepted.status, 200)
  t.equal(tunnelSetups.pendingFor('127.0.0.51', { host: '127.0.0.1', port: origin.port }), 0, 'its TLS handshake has not started, and nothing counts it')
})

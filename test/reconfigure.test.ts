import { test } from 'tap'
import { ProxyAgent, request } from 'undici'
import { startOrigin, startProxy, LOOPBACK_TEST_POLICY } from './helpers/servers'
import { startTcpDestination, echoesThrough } from './helpers/tcp-destination'
import { basic, openTunnel, rawExchange } from './helpers/raw-client'
import Fastify from 'fastify'
import type { AddressInfo } from 'node:net'
import { forwardProxy, ForwardProxyOptionsError, type ForwardProxyOptions, type ForwardProxyRequestTransform } from '../lib/index'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

function get (proxyPort: number, url: string, headers: Record<string, string> = {}): Promise<{ status: number, text: string }> {
  const lines = [`GET ${url} HTTP/1.1`, `Host: ${new URL(url).host}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), 'Connection: close']
  return rawExchange(proxyPort, `${lines.join('\r\n')}\r\n\r\n`)
}

function tagging (tag: string): ForwardProxyRequestTransform {
  return { transformRequest (_request, _destination, outgoing) { outgoing.headers['x-tag'] = [...[outgoing.headers['x-tag'] ?? []].flat(), tag] } }
}

test('reconfigure: users, destinations, limits and the transforms option apply to new requests at once; a kept user\'s open tunnel goes on; addTransform transforms are kept', async (t) => {
  const origin = await startOrigin(t)
  const destination = await startTcpDestination(t)
  const first: ForwardProxyOptions = { destinations: LOOPBACK_TEST_POLICY, auth: { users: { old: 'pw', keeper: 'pw3' } }, transforms: [tagging('option-1')] }
  const app = Fastify()
  await app.register(forwardProxy, first)
  app.forwardProxy.addTransform(tagging('added'))
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const proxy = { app, port: (app.server.address() as AddressInfo).port }
  const open = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`, { 'Proxy-Authorization': basic('keeper', 'pw3') })
  t.teardown(() => { open.socket.destroy() })
  t.equal(open.status, 200)
  const upstream = await destination.nextConnection()
  t.equal((await get(proxy.port, `http://127.0.0.1:${origin.port}/a`, { 'Proxy-Authorization': basic('old', 'pw') })).status, 200)
  t.same(origin.requests[0]?.headers['x-tag'], 'option-1, added')

  proxy.app.forwardProxy.reconfigure({
    destinations: { ...LOOPBACK_TEST_POLICY, deniedHosts: ['localhost'] },
    auth: { users: { new: 'pw2', keeper: 'pw3' } },
    limits: { maxConcurrentTunnels: 1 },
    transforms: [tagging('option-2')]
  })
  t.equal((await get(proxy.port, `http://127.0.0.1:${origin.port}/b`, { 'Proxy-Authorization': basic('old', 'pw') })).status, 407, 'the removed user is refused')
  t.equal((await get(proxy.port, `http://127.0.0.1:${origin.port}/c`, { 'Proxy-Authorization': basic('new', 'pw2') })).status, 200, 'the added user is accepted')
  t.same(origin.requests[1]?.headers['x-tag'], 'option-2, added', 'the option transforms are replaced, the added one kept after them')
  t.equal((await get(proxy.port, `http://localhost:${origin.port}/d`, { 'Proxy-Authorization': basic('new', 'pw2') })).status, 403, 'the new destination policy applies')
  const overLimit = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`, { 'Proxy-Authorization': basic('new', 'pw2') })
  t.teardown(() => { overLimit.socket.destroy() })
  t.equal(overLimit.status, 503, 'the lowered tunnel limit counts the tunnel already open')

  await echoesThrough(open.socket, upstream, 'still here')
  t.pass('the tunnel opened before the change still relays')
})

test('reconfigure: invalid options or a change of a setting fixed at registration throw ForwardProxyOptionsError and change nothing', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 'pw' } } })
  const cases: Array<[string, ForwardProxyOptions]> = [
    ['destinations.allowedHosts[0]', { destinations: { allowedHosts: ['exa mple'] }, auth: { users: { bob: 'pw' } } }],
    ['via', { via: 'other', auth: { users: { bob: 'pw' } } }],
    ['auth', { destinations: LOOPBACK_TEST_POLICY }],
    ['auth.realm', { auth: { users: { bob: 'pw' }, realm: 'other' } }],
    ['limits.httpActivityTimeout', { auth: { users: { bob: 'pw' } }, limits: { httpActivityTimeout: 5 } }]
  ]
  for (const [option, options] of cases) {
    const error = (() => { try { proxy.app.forwardProxy.reconfigure(options); return undefined } catch (caught) { return caught } })()
    t.ok(error instanceof ForwardProxyOptionsError, option)
    t.equal((error as ForwardProxyOptionsError).option, option)
  }
  t.equal((await get(proxy.port, `http://127.0.0.1:${origin.port}/x`, { 'Proxy-Authorization': basic('bob', 'pw') })).status, 407, 'no change took effect')
  t.equal((await get(proxy.port, `http://localhost:${origin.port}/x`, { 'Proxy-Authorization': basic('alice', 'pw') })).status, 200)
})

test('reconfigure: secrets apply to the next request (a new value for the same placeholder)', async (t) => {
  const origin = await startOrigin(t)
  const secret = (value: string): ForwardProxyOptions => ({ destinations: LOOPBACK_TEST_POLICY, secrets: [{ name: 'api', value, hosts: ['localhost'], placeholder: 'PLACEHOLDER_API' }] })
  const proxy = await startProxy(t, secret('value-one-1234'))
  const plain = await get(proxy.port, `http://127.0.0.1:${origin.port}/x`, { 'X-Key': 'PLACEHOLDER_API' })
  t.equal(plain.status, 403, 'toward a host the secret is not granted')
  proxy.app.forwardProxy.reconfigure({ ...secret('value-two-1234'), secrets: [{ name: 'api', value: 'value-two-1234', hosts: [`127.0.0.1:${origin.port}`], placeholder: 'PLACEHOLDER_API' }] })
  const again = await get(proxy.port, `http://127.0.0.1:${origin.port}/x`, { 'X-Key': 'PLACEHOLDER_API' })
  t.match(again.text, /details="credentials are not sent over plain http"/, 'now granted to 127.0.0.1, still never in clear')
  await expectNothingDialedBefore(t, origin.accepts, 'nothing was sent')
})

test('reconfigure under load: requests keep flowing through 50 reconfigurations with nothing dropped', async (t) => {
  const origin = await startOrigin(t)
  const options = (n: number): ForwardProxyOptions => ({ destinations: LOOPBACK_TEST_POLICY, auth: { users: { alice: 'pw', [`user-${n}`]: 'x' } }, limits: { maxConcurrentTunnels: 1000 + n } })
  const proxy = await startProxy(t, options(0))
  const agent = new ProxyAgent({ uri: proxy.url, token: basic('alice', 'pw') })
  t.teardown(() => agent.close())
  let reloads = 0
  const reloading = (async () => {
    while (reloads < 50) {
      proxy.app.forwardProxy.reconfigure(options(++reloads))
      await new Promise((resolve) => setImmediate(resolve))
    }
  })()
  const statuses = await Promise.all(Array.from({ length: 400 }, async (_, i) => {
    const response = await request(`http://127.0.0.1:${origin.port}/r${i}`, { dispatcher: agent })
    await response.body.text()
    return response.statusCode
  }))
  await reloading
  t.equal(reloads, 50)
  t.same(statuses.filter((status) => status !== 200), [], 'every request got its answer')
  t.equal(origin.requests.length, 400)
})

test('reconfigure: a refused change (a setting fixed at registration) applies none of the other settings it carries: tunnel and request limits, destinations and users stay as they were', async (t) => {
  const origin = await startOrigin(t)
  const destination = await startTcpDestination(t)
  const registered: ForwardProxyOptions = { auth: { users: { alice: 'pw' } }, destinations: LOOPBACK_TEST_POLICY, limits: { maxConcurrentTunnels: 3, maxConcurrentRequests: 3 } }
  const proxy = await startProxy(t, registered)
  const alice = { 'Proxy-Authorization': basic('alice', 'pw') }
  const refusedChange: ForwardProxyOptions = {
    auth: { users: { bob: 'pw' } },
    destinations: { allowedHosts: ['elsewhere.example'], allowedPorts: [443] },
    limits: { maxConcurrentTunnels: 1, maxConcurrentRequests: 1 },
    via: 'other'
  }
  const error = (() => { try { proxy.app.forwardProxy.reconfigure(refusedChange); return undefined } catch (caught) { return caught } })()
  t.ok(error instanceof ForwardProxyOptionsError, 'refused')
  t.equal((error as ForwardProxyOptionsError).option, 'via')

  const target = `127.0.0.1:${destination.port}`
  const tunnels = [await openTunnel(proxy.port, target, alice), await openTunnel(proxy.port, target, alice)]
  t.teardown(() => { for (const tunnel of tunnels) tunnel.socket.destroy() })
  t.same(tunnels.map((tunnel) => tunnel.status), [200, 200], 'two tunnels at once: the limit of 1 was not applied')
  const [first] = tunnels
  if (first !== undefined) await echoesThrough(first.socket, await destination.nextConnection(), 'through the tunnel')
  t.equal((await get(proxy.port, `http://127.0.0.1:${origin.port}/x`, alice)).status, 200, 'alice and the loopback destination still pass (while two tunnels are open)')
  t.equal((await get(proxy.port, `http://127.0.0.1:${origin.port}/x`, { 'Proxy-Authorization': basic('bob', 'pw') })).status, 407, 'bob was not added')
  t.equal(proxy.app.forwardProxy.activeTunnels, 2)
})

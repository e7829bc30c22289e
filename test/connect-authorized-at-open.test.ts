import { test } from 'tap'
import { startProxy, startSentinel } from './helpers/servers'
import { basic, openTunnel } from './helpers/raw-client'
import { eventually } from './helpers/eventually'
import type { ForwardProxyResolver } from '../lib/index'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const ALICE = { 'Proxy-Authorization': basic('alice', 's3cret') }

/** A resolver that maps every name to 127.0.0.1 and counts its calls (policy runs before DNS). */
function countingResolver (): { resolver: ForwardProxyResolver, calls: string[] } {
  const calls: string[] = []
  return { calls, resolver: async (name) => { calls.push(name); return [{ address: '127.0.0.1', family: 4 }] } }
}

test('with auth on, a CONNECT without credentials gets 407 with Proxy-Authenticate before policy, DNS or any connect', async (t) => {
  const sentinel = await startSentinel(t)
  const dns = countingResolver()
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } }, resolver: dns.resolver, destinations: { allowPrivateNetworks: true, allowedPorts: '*', deniedHosts: ['blocked.test'] } })
  for (const target of [`127.0.0.1:${sentinel.port}`, `allowed.test:${sentinel.port}`, `blocked.test:${sentinel.port}`]) {
    const tunnel = await openTunnel(proxy.port, target)
    t.equal(tunnel.status, 407, `${target}: 407, not a policy answer`)
    t.match(tunnel.head, /\r\nproxy-authenticate: Basic realm=/i)
    t.match(tunnel.head, /\r\nproxy-status: fastify-forward-proxy; error=http_request_denied/i)
    tunnel.socket.destroy()
  }
  t.same(dns.calls, [], 'no name was resolved for an unauthenticated CONNECT')
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing reached the destination')
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

test('an authenticated CONNECT to a denied host or port gets 403 and the destination is never contacted', async (t) => {
  const sentinel = await startSentinel(t)
  const dns = countingResolver()
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } }, resolver: dns.resolver, destinations: { allowPrivateNetworks: true, allowedPorts: [443], deniedHosts: ['blocked.test'] } })
  for (const target of [`blocked.test:${sentinel.port}`, `allowed.test:${sentinel.port}`, `127.0.0.1:${sentinel.port}`]) {
    const tunnel = await openTunnel(proxy.port, target, ALICE)
    t.equal(tunnel.status, 403, `${target}: 403`)
    t.match(tunnel.head, /\r\nproxy-status: fastify-forward-proxy; error=\w+/i)
    tunnel.socket.destroy()
  }
  t.same(dns.calls, [], 'refused by policy before any DNS lookup')
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing reached the destination')
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

test('control: the same authenticated CONNECT to an allowed host and port opens and reaches the destination', async (t) => {
  const sentinel = await startSentinel(t)
  const dns = countingResolver()
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } }, resolver: dns.resolver, destinations: { allowPrivateNetworks: true, allowedPorts: [sentinel.port], deniedHosts: ['blocked.test'] } })
  const tunnel = await openTunnel(proxy.port, `allowed.test:${sentinel.port}`, ALICE)
  t.equal(tunnel.status, 200)
  t.same(dns.calls, ['allowed.test'])
  await eventually(() => sentinel.connections.length === 1)
  t.equal(sentinel.connections.length, 1)
  tunnel.socket.destroy()
})

import { test } from 'tap'
import { startOrigin, startProxy, startSentinel } from './helpers/servers'
import { openTunnel, rawExchange } from './helpers/raw-client'
import type { ForwardProxyResolver } from '../lib/index'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

// 127.0.0.2 stands in for an allowed (public) address, 127.0.0.3 for loopback/private: only
// 127.0.0.2/32 is allowed, everything else special-purpose is refused as by default.
const POLICY = { allowedNetworks: ['127.0.0.2/32'], allowedPorts: '*' as const }

/** A resolver that answers the allowed address once, then the refused one (a rebinding DNS server). */
function rebindingResolver (): { resolver: ForwardProxyResolver, calls: () => number } {
  let calls = 0
  return {
    resolver: async () => (calls++ === 0 ? [{ address: '127.0.0.2', family: 4 }] : [{ address: '127.0.0.3', family: 4 }]),
    calls: () => calls
  }
}

test('DNS rebinding: a name that resolves to an allowed address at policy time and to loopback at connect time is refused (http:// forwarding)', async (t) => {
  const origin = await startOrigin(t, (_req, res) => { res.setHeader('connection', 'close'); res.end('from the allowed address') }, '127.0.0.2')
  const sentinel = await startSentinel(t, '127.0.0.3', origin.port)
  const { resolver, calls } = rebindingResolver()
  const proxy = await startProxy(t, { destinations: POLICY, resolver })

  const statuses: number[] = []
  for (let i = 0; i < 3; i++) {
    const res = await rawExchange(proxy.port, `GET http://rebind.test:${origin.port}/${i} HTTP/1.1\r\nHost: rebind.test\r\nConnection: close\r\n\r\n`)
    statuses.push(res.status)
    if (res.status === 403) t.match(res.text, /proxy-status: fastify-forward-proxy; error=destination_ip_prohibited/i)
  }
  t.equal(statuses[0], 200, 'the first connection goes to the allowed address')
  t.same(statuses.slice(1), [403, 403], 'later connections, resolved to loopback, are refused')
  t.ok(calls() >= 3, 'every new upstream connection resolved and checked the name again')
  t.equal(origin.requests.length, 1)
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing ever reached the rebinding target')
})

test('DNS rebinding: a name that resolves to an allowed address at policy time and to loopback at connect time is refused (CONNECT)', async (t) => {
  const origin = await startOrigin(t, undefined, '127.0.0.2')
  const sentinel = await startSentinel(t, '127.0.0.3', origin.port)
  const { resolver } = rebindingResolver()
  const proxy = await startProxy(t, { destinations: POLICY, resolver })

  const first = await openTunnel(proxy.port, `rebind.test:${origin.port}`)
  t.equal(first.status, 200)
  first.socket.destroy()
  const second = await openTunnel(proxy.port, `rebind.test:${origin.port}`)
  t.equal(second.status, 403)
  t.match(second.head, /proxy-status: fastify-forward-proxy; error=destination_ip_prohibited/i)
  second.socket.destroy()
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing ever reached the rebinding target')
})

test('a name with an allowed and a refused answer is dialed only at the allowed address', async (t) => {
  const sentinel = await startSentinel(t, '127.0.0.3')
  const origin = await startOrigin(t, undefined, '127.0.0.2')
  // The refused answer comes first, so a proxy that dialed answers in order would hit it.
  const resolver: ForwardProxyResolver = async () => [{ address: '127.0.0.3', family: 4 }, { address: '127.0.0.2', family: 4 }]
  const proxy = await startProxy(t, { destinations: POLICY, resolver })
  const res = await rawExchange(proxy.port, `GET http://mixed.test:${origin.port}/ HTTP/1.1\r\nHost: mixed.test\r\nConnection: close\r\n\r\n`)
  t.equal(res.status, 200)
  t.equal(origin.requests.length, 1)
  await expectNothingDialedBefore(t, sentinel.accepts, 'the refused address was never dialed')
})

test('a name resolving only to private addresses gets 403 without a connection', async (t) => {
  const sentinel = await startSentinel(t, '127.0.0.3')
  const resolver: ForwardProxyResolver = async () => [{ address: '127.0.0.3', family: 4 }]
  const proxy = await startProxy(t, { destinations: POLICY, resolver })
  const tunnel = await openTunnel(proxy.port, `private.test:${sentinel.port}`)
  t.equal(tunnel.status, 403)
  t.match(tunnel.head, /error=destination_ip_prohibited; details="loopback address"/)
  t.notMatch(tunnel.head, /127\.0\.0\.3/, 'the refusal never reveals the internal address')
  tunnel.socket.destroy()
  await expectNothingDialedBefore(t, sentinel.accepts, 'the private address was never dialed')
})

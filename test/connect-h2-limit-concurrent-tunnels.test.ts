import { test } from 'tap'
import { openHttp2Tunnel, startHttp2TunnelRig } from './helpers/http2-proxy'
import { once } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'

test('MaxConcurrentTunnels counts HTTP/2 tunnels: with a limit of 1 a second stream gets 503 connection_limit_reached, the first still relays, and the slot comes back when it closes', async (t) => {
  const { proxy, session, target, open } = await startHttp2TunnelRig(t, { limits: { maxConcurrentTunnels: 1 } })
  const { tunnel: first, upstream } = await open()
  t.equal(proxy.app.forwardProxy.activeTunnels, 1)

  const second = await openHttp2Tunnel(session, target)
  t.equal(second.status, 503)
  t.match(second.headers['proxy-status'], /^fastify-forward-proxy; error=connection_limit_reached/)
  await second.body()

  const echoed = new Promise<Buffer>((resolve) => first.stream.once('data', resolve))
  upstream.on('data', (chunk: Buffer) => upstream.write(chunk))
  first.stream.write('first still works')
  t.equal((await echoed).toString(), 'first still works')

  const upstreamClosed = once(upstream, 'close')
  first.stream.close()
  await upstreamClosed
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  // The freed slot is used by the next stream.
  const { tunnel: third } = await open()
  third.stream.close()
})

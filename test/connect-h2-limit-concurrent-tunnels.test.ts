import { test } from 'tap'
import { connectHttp2, openHttp2Tunnel, startHttp2Proxy } from './helpers/http2-proxy'
import { once, startTcpDestination } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'

test('MaxConcurrentTunnels counts HTTP/2 tunnels: with a limit of 1 a second stream gets 503 connection_limit_reached, the first still relays, and the slot comes back when it closes', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startHttp2Proxy(t, { limits: { maxConcurrentTunnels: 1 } })
  const session = await connectHttp2(t, proxy)
  const first = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`)
  t.equal(first.status, 200)
  const upstream = await destination.nextConnection()
  t.equal(proxy.app.forwardProxy.activeTunnels, 1)

  const second = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`)
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
  const third = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`)
  t.equal(third.status, 200, 'the freed slot is used by the next stream')
  await destination.nextConnection()
  third.stream.close()
})

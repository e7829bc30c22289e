import { test } from 'tap'
import { createServer, type AddressInfo } from 'node:net'
import type { ForwardProxyResolver } from '../lib/index'
import { connectHttp2, openHttp2Tunnel, startHttp2Proxy } from './helpers/http2-proxy'

test('before the 200: a failed dial is an HTTP status with Proxy-Status on the stream (502 connection_refused, 502 dns_error), and the session goes on', async (t) => {
  const closed = createServer()
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
  const port = (closed.address() as AddressInfo).port
  await new Promise<void>((resolve) => closed.close(() => resolve()))

  let lookups = 0
  const failing: ForwardProxyResolver = async () => { lookups++; throw Object.assign(new Error('queryA ENOTFOUND'), { code: 'ENOTFOUND' }) }
  const proxy = await startHttp2Proxy(t, { resolver: failing })
  const session = await connectHttp2(t, proxy)

  const refused = await openHttp2Tunnel(session, `127.0.0.1:${port}`)
  t.equal(refused.status, 502)
  t.match(refused.headers['proxy-status'], /^fastify-forward-proxy; error=connection_refused/)
  await refused.body()

  const unresolved = await openHttp2Tunnel(session, 'no-such-host.test:443')
  t.equal(unresolved.status, 502)
  t.match(unresolved.headers['proxy-status'], /^fastify-forward-proxy; error=dns_error/)
  t.equal(lookups, 1, 'the injected resolver was asked')
  await unresolved.body()

  t.notOk(session.closed || session.destroyed, 'the session is still open')
  t.equal(proxy.app.forwardProxy.activeTunnels, 0, 'no slot kept by the failed dials')
})

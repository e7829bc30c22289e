import { test } from 'tap'
import { startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import type { ForwardProxyResolver } from '../lib/index'

test('dns_error: a name that does not resolve gets 502; dns_timeout: a resolver that never answers gets 504', async (t) => {
  const failing: ForwardProxyResolver = async () => { throw Object.assign(new Error('queryA ENOTFOUND'), { code: 'ENOTFOUND' }) }
  const proxy = await startProxy(t, { resolver: failing })
  const missing = await openTunnel(proxy.port, 'no-such-host.test:443')
  t.equal(missing.status, 502)
  t.match(missing.head, /error=dns_error/)
  missing.socket.destroy()

  const silent: ForwardProxyResolver = async (_name, signal) => await new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason)))
  const slow = await startProxy(t, { resolver: silent, limits: { connectTimeout: 200 } })
  const timedOut = await openTunnel(slow.port, 'slow-dns.test:443')
  t.equal(timedOut.status, 504)
  t.match(timedOut.head, /error=dns_timeout/)
  timedOut.socket.destroy()
  t.equal(slow.app.forwardProxy.activeTunnels, 0)
})

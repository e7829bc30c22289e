import { test } from 'tap'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'
import { openInterceptedTls } from './helpers/intercepted-client'
import { openTunnel } from './helpers/raw-client'
import { eventually } from './helpers/eventually'

test('MaxConcurrentTunnels: an intercepted tunnel counts against it until it closes (503 connection_limit_reached meanwhile), then the slot comes back', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { limits: { maxConcurrentTunnels: 1 } },
    interception: interceptAll(pki)
  })
  const target = `127.0.0.1:${origin.port}`
  const intercepted = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
  t.equal(proxy.app.forwardProxy.activeTunnels, 1)

  const refused = await openTunnel(proxy.port, target)
  t.equal(refused.status, 503)
  t.match(refused.head, /error=connection_limit_reached/)
  refused.socket.destroy()

  intercepted.end()
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  const next = await openTunnel(proxy.port, target)
  t.equal(next.status, 200)
  next.socket.destroy()
})

import { test } from 'tap'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, interceptAll } from './helpers/intercepting-proxy'
import { openTunnel } from './helpers/raw-client'

test('HandshakeTimeout default: without handshakeTimeout, an intercepted tunnel whose client sends no ClientHello is closed after 10 s, not before', { timeout: 30_000 }, async (t) => {
  const pki = await makeInterceptionPki(t)
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  // Read before the CONNECT, so the time the proxy's timer counts while the 200 comes back
  // (long on a loaded machine) is inside the span measured below.
  const opened = Date.now()
  const tunnel = await openTunnel(proxy.port, 'example.com:443')
  t.equal(tunnel.status, 200)
  const closed = await Promise.race([
    new Promise<boolean>((resolve) => tunnel.socket.once('close', () => resolve(true))),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 20_000).unref())
  ])
  const elapsed = Date.now() - opened
  if (!t.ok(closed, 'the silent tunnel was closed within 20 s')) return
  // The default itself is what is checked: a silent client is closed at 10 s, not at Node's 120 s.
  t.ok(elapsed >= 9_900 && elapsed < 20_000, `closed after ${elapsed} ms`)
})

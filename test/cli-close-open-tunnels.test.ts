import { test } from 'tap'
import { once } from 'node:events'
import { parseConfig, startProxyServer } from './helpers/internals'
import { openTunnel } from './helpers/raw-client'
import { startTcpDestination } from './helpers/tcp-destination'

test('server: close() ends tunnels open on the first and on a second listener promptly', async (t) => {
  const destination = await startTcpDestination(t)
  const server = await startProxyServer(parseConfig({
    log: { level: 'silent' },
    listen: [{ host: '127.0.0.1', port: 0 }, { host: '127.0.0.1', port: 0 }],
    // Long idle timeout: if close() relied on it, this test would time out.
    limits: { tunnelIdleTimeout: 600_000 },
    destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' }
  }, 'test.json', '/'))
  let closed = false
  t.teardown(async () => { if (!closed) await server.close() })
  const ports = server.urls.map((url) => Number(new URL(url).port))
  const tunnels = await Promise.all(ports.map((port) => openTunnel(port, `127.0.0.1:${destination.port}`)))
  for (const tunnel of tunnels) t.equal(tunnel.status, 200)
  const ended = tunnels.map((tunnel) => once(tunnel.socket, 'close'))
  await server.close()
  closed = true
  await Promise.all(ended)
  t.equal(server.app.forwardProxy.activeTunnels, 0)
})

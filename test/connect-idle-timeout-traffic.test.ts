import { test } from 'tap'
import { startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { startTcpDestination } from './helpers/tcp-destination'

test('tunnel relay: traffic keeps a tunnel open past tunnelIdleTimeout', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t, { limits: { tunnelIdleTimeout: 300 } })
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  const upstream = await destination.nextConnection()
  upstream.on('data', (chunk: Buffer) => upstream.write(chunk))
  for (let i = 0; i < 8; i++) {
    tunnel.socket.write(`ping ${i}`)
    await new Promise<void>((resolve) => tunnel.socket.once('data', () => resolve()))
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  t.notOk(tunnel.socket.destroyed, 'still open after 800 ms of traffic with a 300 ms idle timeout')
  tunnel.socket.destroy()
})

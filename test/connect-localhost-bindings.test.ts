import { test } from 'tap'
import { listenOnBothLoopbacks } from './helpers/localhost-loopbacks'
import Fastify from 'fastify'
import { forwardProxy } from '../lib/index'
import { LOOPBACK_TEST_POLICY, startOrigin } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'

test('Fastify listening on localhost: CONNECT works on every address it binds (secondary servers included)', async (t) => {
  const origin = await startOrigin(t)
  const app = Fastify()
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY })
  await listenOnBothLoopbacks(app)
  t.teardown(() => app.close())
  const port = (app.server.address() as { port: number }).port
  const addresses = app.addresses().map((info) => (typeof info === 'string' ? info : info.address))
  t.same(addresses.sort(), ['127.0.0.1', '::1'], 'a main and a secondary server')
  for (const address of addresses) {
    const tunnel = await openTunnel(port, `127.0.0.1:${origin.port}`, {}, address)
    t.equal(tunnel.status, 200, `CONNECT via ${address}`)
    tunnel.socket.destroy()
  }
})

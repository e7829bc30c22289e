import { test } from 'tap'
import dns from 'node:dns'
import Fastify from 'fastify'
import { forwardProxy } from '../lib/index'
import { LOOPBACK_TEST_POLICY, startOrigin } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'

test('Fastify listening on localhost: CONNECT works on every address it binds (secondary servers included)', async (t) => {
  // This machine's resolver gives localhost only 127.0.0.1; Fastify binds one server per
  // address dns.lookup returns, so answer both loopback addresses while it listens.
  const realLookup = dns.lookup
  const bothLoopbacks = (...args: unknown[]): void => {
    const [host, options] = args
    const callback = args[args.length - 1] as (error: null, addresses: Array<{ address: string, family: number }>) => void
    if (host === 'localhost' && typeof options === 'object' && options !== null && (options as { all?: boolean }).all === true) {
      callback(null, [{ address: '127.0.0.1', family: 4 }, { address: '::1', family: 6 }])
      return
    }
    Reflect.apply(realLookup, dns, args)
  }
  Object.assign(dns, { lookup: bothLoopbacks })
  const origin = await startOrigin(t)
  const app = Fastify()
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY })
  try {
    await app.listen({ port: 0, host: 'localhost' })
  } finally {
    Object.assign(dns, { lookup: realLookup })
  }
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

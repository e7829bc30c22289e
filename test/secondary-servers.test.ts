import { test } from 'tap'
import dns from 'node:dns'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import { secondaryServersOf } from './helpers/internals'

// lib/connect/secondary-servers.ts reads Fastify's private list of the extra servers it binds.
// This holds the Fastify installed here to it, so a release that keeps them elsewhere fails
// here, by name, rather than as CONNECTs to ::1 refused on some machines.

test('Fastify listening on a name with two addresses: secondaryServersOf finds the one server it bound besides app.server', async (t) => {
  // This machine's resolver may give localhost one address; Fastify binds one server per
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
  const app = Fastify()
  try {
    await app.listen({ port: 0, host: 'localhost' })
  } finally {
    Object.assign(dns, { lookup: realLookup })
  }
  t.teardown(() => app.close())
  t.equal(app.addresses().length, 2, 'Fastify bound two servers')
  const secondary = secondaryServersOf(app)
  t.equal(secondary.length, 1, 'the second one is found where Fastify keeps it')
  t.not(secondary[0], app.server)
  t.equal((secondary[0]?.address() as AddressInfo | null)?.address, '::1')
})

test('Fastify listening on one address: no secondary server', async (t) => {
  const app = Fastify()
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  t.same(secondaryServersOf(app), [])
})

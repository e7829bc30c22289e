import { test } from 'tap'
import { listenOnBothLoopbacks } from './helpers/localhost-loopbacks'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import { secondaryServersOf } from './helpers/internals'

// lib/connect/secondary-servers.ts reads Fastify's private list of the extra servers it binds.
// This holds the Fastify installed here to it, so a release that keeps them elsewhere fails
// here, by name, rather than as CONNECTs to ::1 refused on some machines.

test('Fastify listening on a name with two addresses: secondaryServersOf finds the one server it bound besides app.server', async (t) => {
  const app = Fastify()
  await listenOnBothLoopbacks(app)
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

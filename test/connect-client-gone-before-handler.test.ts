import { test } from 'tap'
import { connect } from 'node:net'
import { startProxy } from './helpers/servers'
import { basic, openTunnel } from './helpers/raw-client'
import { startOrderedDestination } from './helpers/ordered-destination'
import { eventually } from './helpers/eventually'
import type { ForwardProxyResolver } from '../lib/index'
import { deferred } from './helpers/deferred'

test('a client that leaves during a slow credential check is never dialed for, and leaks no slot', async (t) => {
  const destination = await startOrderedDestination(t)
  const closed = deferred()
  const checkStarted = deferred()
  const lookups: string[] = []
  const resolver: ForwardProxyResolver = async (name) => { lookups.push(name); return [{ address: '127.0.0.1', family: 4 }] }
  const proxy = await startProxy(t, {
    resolver,
    auth: { validate: async () => { checkStarted.resolve(); await closed.promise; return true } }
  })
  const socket = connect(proxy.port, '127.0.0.1', () => socket.write(`CONNECT slow-auth.test:${destination.port} HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basic('alice', 'x')}\r\n\r\n`))
  socket.on('error', () => {})
  await checkStarted.promise
  socket.resetAndDestroy()
  await new Promise((resolve) => socket.once('close', resolve))
  const serverConnections = async (): Promise<number> => await new Promise((resolve) => proxy.app.server.getConnections((_error, count) => resolve(count)))
  while (await serverConnections() > 0) await new Promise((resolve) => setTimeout(resolve, 10))
  closed.resolve()
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  // A probe after it: had the gone client's CONNECT been resolved and dialed, that lookup and
  // connection would have come first.
  const probe = await openTunnel(proxy.port, `probe.test:${destination.port}`, { 'Proxy-Authorization': basic('alice', 'x') })
  t.equal(probe.status, 200)
  probe.socket.write('probe')
  t.equal(await destination.indexOfSender('probe'), 0, 'the destination was never dialed for the client that left')
  t.same(lookups, ['probe.test'], 'the gone client\'s destination name was never resolved')
  probe.socket.destroy()
})

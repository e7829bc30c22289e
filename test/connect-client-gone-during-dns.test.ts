import { test } from 'tap'
import { connect } from 'node:net'
import { startProxy } from './helpers/servers'
import { startOrderedDestination } from './helpers/ordered-destination'
import { openTunnel } from './helpers/raw-client'
import { eventually } from './helpers/eventually'
import type { ForwardProxyResolver } from '../lib/index'
import { deferred } from './helpers/deferred'

test('a client that leaves while the destination is being resolved releases its slot and nothing is dialed', async (t) => {
  const destination = await startOrderedDestination(t)
  const lookupStarted = deferred()
  const slow: ForwardProxyResolver = async (_name, signal) => {
    lookupStarted.resolve()
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => resolve([{ address: '127.0.0.1', family: 4 }]), 300)
      signal.addEventListener('abort', () => { clearTimeout(timer); reject(signal.reason) })
    })
  }
  const proxy = await startProxy(t, { resolver: slow })
  const socket = connect(proxy.port, '127.0.0.1', () => socket.write(`CONNECT slow.test:${destination.port} HTTP/1.1\r\nHost: x\r\n\r\n`))
  socket.on('error', () => {})
  await lookupStarted.promise
  t.equal(proxy.app.forwardProxy.activeTunnels, 1)
  // A reset: a FIN alone is a half-close, which a client may send after early data.
  socket.resetAndDestroy()
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  // A probe through the same slow lookup: had the gone client's CONNECT been dialed, its
  // connection would have come first.
  const probe = await openTunnel(proxy.port, `slow.test:${destination.port}`)
  t.equal(probe.status, 200)
  probe.socket.write('probe')
  t.equal(await destination.indexOfSender('probe'), 0, 'the destination was never dialed for a client that had gone')
  probe.socket.destroy()
})

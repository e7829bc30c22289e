import { connect } from 'node:net'
import { test } from 'tap'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, staticProvider } from './helpers/intercepting-proxy'
import { startOrderedDestination } from './helpers/ordered-destination'
import { eventually } from './helpers/eventually'
import { within } from './helpers/within'
import { openTunnel } from './helpers/raw-client'
import { deferred } from './helpers/deferred'

test('the signal a selector is given aborts when the client leaves while it decides; the tunnel slot is released and nothing is dialed', async (t) => {
  const pki = await makeInterceptionPki(t)
  const destination = await startOrderedDestination(t)
  const selectorStarted = deferred()
  const selectorAborted = deferred()
  let calls = 0
  const proxy = await startInterceptingProxy(t, pki, {
    interception: {
      certificateProvider: staticProvider(pki),
      selector: {
        // The first CONNECT's selector waits for its signal; the probe's declines at once (opaque).
        shouldIntercept: async (_request, _destination, signal) => {
          if (++calls > 1) return false
          return await new Promise<boolean>((resolve) => {
            selectorStarted.resolve()
            signal.addEventListener('abort', () => { selectorAborted.resolve(); resolve(false) })
          })
        }
      }
    }
  })
  const socket = connect(proxy.port, '127.0.0.1', () => socket.write(`CONNECT 127.0.0.1:${destination.port} HTTP/1.1\r\nHost: x\r\n\r\n`))
  socket.on('error', () => {})
  await selectorStarted.promise
  t.equal(proxy.app.forwardProxy.activeTunnels, 1)
  socket.resetAndDestroy()
  await within(selectorAborted.promise, 'the selector\'s signal to abort')
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  // Had the gone client's CONNECT been dialed, its connection would have come before the probe's.
  const probe = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  t.teardown(() => probe.socket.destroy())
  t.equal(probe.status, 200)
  probe.socket.write('probe')
  t.equal(await destination.indexOfSender('probe'), 0, 'nothing was dialed for the client that left')
})

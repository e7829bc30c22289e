import { test } from 'tap'
import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import type { Socket } from 'node:net'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { startTcpDestination, once } from './helpers/tcp-destination'
import { capturedLog } from './helpers/captured-log'
import { eventually } from './helpers/eventually'

// Whatever still holds a closed socket (an application's list of its connections, say) holds
// everything the socket reaches. So once a tunnel is over, neither of its sockets may reach the
// tunnel's request, reply, relay or admission.

setFlagsFromString('--expose-gc')
const collectGarbage = runInNewContext('gc') as () => void

test('opaque tunnels, memory: once a tunnel has closed, its client and destination sockets hold nothing of it (its request can be collected while both sockets are still held)', async (t) => {
  const destination = await startTcpDestination(t)
  const log = capturedLog()
  // Every socket this process dials, the proxy's connection to the destination among them.
  const dialed: Socket[] = []
  const onDial = (message: unknown): void => { dialed.push((message as { socket: Socket }).socket) }
  subscribe('net.client.socket', onDial)
  t.teardown(() => unsubscribe('net.client.socket', onDial))
  const accepted: Socket[] = []
  let requestRef: WeakRef<object> | undefined
  const proxy = await startProxy(t, {}, (app) => {
    app.server.on('connection', (socket: Socket) => { accepted.push(socket) })
    app.addHook('onRequest', (request, _reply, done) => {
      requestRef = new WeakRef(request)
      done()
    })
  }, { logger: log.logger })

  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  t.equal(tunnel.status, 200)
  const upstream = await destination.nextConnection()
  tunnel.socket.write('ping')
  await once(upstream, 'data')

  const clientSide = accepted[0]
  const destinationSide = dialed.find((socket) => socket.remotePort === destination.port)
  if (clientSide === undefined || destinationSide === undefined) throw new Error('the proxy\'s two sockets of the tunnel were not seen')
  tunnel.socket.end()
  upstream.end()
  // The access line is written when both sides have closed, as the relay finishes.
  await eventually(() => log.access().some((line) => line.kind === 'tunnel'))
  t.equal(clientSide.destroyed && destinationSide.destroyed, true, 'both of the proxy\'s sockets are closed')

  // Let the turn that closed them end, then collect: only the sockets (held here) keep anything.
  await new Promise((resolve) => setImmediate(resolve))
  collectGarbage()
  t.equal(requestRef?.deref(), undefined, 'the tunnel\'s request was collected while its sockets are still held')
  t.ok(clientSide.listenerCount('close') === 0 && destinationSide.listenerCount('close') === 0, 'no close listener is left on either socket')
  t.equal(destinationSide.listenerCount('error'), 1, 'one listener still ignores a late error')
})

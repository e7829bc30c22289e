import { test } from 'tap'
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:https'
import type { AddressInfo, Socket } from 'node:net'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, interceptAll } from './helpers/intercepting-proxy'
import { startInnerTls, tunnelTransport } from './helpers/intercepted-client'
import { openTunnel } from './helpers/raw-client'
import { deferred } from './helpers/deferred'

test('a client that leaves (connection reset) while the destination has not answered its WebSocket handshake: the proxy closes its connection to the destination', async (t) => {
  const pki = await makeInterceptionPki(t)
  const handshakeArrived = deferred()
  const destinationSideClosed = deferred()
  // A destination that takes the handshake and never answers it.
  const sockets = new Set<Socket>()
  const origin = createServer({ cert: pki.originLeaf.cert, key: pki.originLeaf.key })
  origin.on('tlsClientError', () => {})
  origin.on('upgrade', (_req, socket: Socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
    socket.once('close', () => destinationSideClosed.resolve())
    handshakeArrived.resolve()
  })
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    for (const socket of sockets) socket.destroy()
    origin.close(() => resolve())
  }))
  const target = `127.0.0.1:${(origin.address() as AddressInfo).port}`
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })

  const tunnel = await openTunnel(proxy.port, target)
  t.equal(tunnel.status, 200)
  t.teardown(() => { tunnel.socket.destroy() })
  const client = await startInnerTls(tunnelTransport(tunnel), { ca: pki.operatorCa.cert })
  client.write(`GET /ws HTTP/1.1\r\nHost: ${target}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n\r\n`)
  await handshakeArrived.promise
  // A reset, not a FIN: after a FIN the client could still read the answer (half-close is carried).
  tunnel.socket.resetAndDestroy()
  await destinationSideClosed.promise
  t.pass('the destination\'s connection closed once the client left')
})

import { test } from 'tap'
import { createServer, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { startInterceptedPath } from './helpers/https-destination'
import { eventually } from './helpers/eventually'

test('a destination that accepts TCP and never answers the ClientHello gets 504 connection_timeout within connectTimeout (DNS, TCP and handshake share it)', async (t) => {
  const sockets: Socket[] = []
  let closed = 0
  const server = createServer((socket) => {
    sockets.push(socket)
    socket.on('error', () => {})
    socket.on('close', () => { closed++ })
    socket.resume()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { for (const socket of sockets) socket.destroy(); server.close() })
  const forwarder = await startInterceptedPath(t, (server.address() as AddressInfo).port, {}, { limits: { connectTimeout: 400 } })

  const started = Date.now()
  const res = await forwarder.request('/')
  const elapsed = Date.now() - started
  t.equal(res.statusCode, 504)
  t.equal(res.headers['proxy-status'], 'fastify-forward-proxy; error=connection_timeout; details="TLS handshake timed out"')
  await res.body.dump()
  t.ok(elapsed >= 350 && elapsed < 3000, `answered after ${elapsed} ms`)
  t.equal(sockets.length, 1)
  await eventually(() => closed === 1)
  t.pass('the proxy closed the stalled connection')
})

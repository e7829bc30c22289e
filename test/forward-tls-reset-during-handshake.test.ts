import { test } from 'tap'
import { createServer, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { startInterceptedPath } from './helpers/https-destination'

test('a destination that resets the connection on the ClientHello gets 502 tls_protocol_error', async (t) => {
  const server = createServer((socket: Socket) => {
    socket.on('error', () => {})
    socket.once('data', () => socket.resetAndDestroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const forwarder = await startInterceptedPath(t, (server.address() as AddressInfo).port)

  const res = await forwarder.request('/')
  t.equal(res.statusCode, 502)
  t.equal(res.headers['proxy-status'], 'fastify-forward-proxy; error=tls_protocol_error; details="handshake failed"')
  t.notMatch(await res.body.text(), /ECONNRESET|socket/)
})

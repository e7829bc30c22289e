import { test } from 'tap'
import { connect } from 'node:net'
import { startProxy } from './helpers/servers'
import type { ForwardProxyResolver } from '../lib/index'
import { deferred } from './helpers/deferred'

test('fastify.close() while a CONNECT is still resolving its destination completes promptly and closes that client', async (t) => {
  const lookupStarted = deferred()
  const neverAnswers: ForwardProxyResolver = async (_name, signal) => {
    lookupStarted.resolve()
    return await new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason)))
  }
  // Default connectTimeout (10 s): close() must not wait for it.
  const proxy = await startProxy(t, { resolver: neverAnswers })
  const socket = connect(proxy.port, '127.0.0.1', () => socket.write('CONNECT slow.test:443 HTTP/1.1\r\nHost: x\r\n\r\n'))
  socket.on('error', () => {})
  t.teardown(() => socket.destroy())
  let received = ''
  socket.on('data', (chunk: Buffer) => { received += chunk.toString() })
  const clientClosed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  await lookupStarted.promise
  t.equal(proxy.app.forwardProxy.activeTunnels, 1)
  const begun = Date.now()
  await proxy.app.close()
  await clientClosed
  const elapsed = Date.now() - begun
  t.ok(elapsed < 2000, `closed in ${elapsed} ms, not after connectTimeout`)
  t.notMatch(received, /^HTTP\/1\.1 200/, 'no tunnel was opened')
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

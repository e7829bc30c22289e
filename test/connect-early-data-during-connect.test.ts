import { test } from 'tap'
import { connect } from 'node:net'
import { startProxy } from './helpers/servers'
import { readAll, startTcpDestination } from './helpers/tcp-destination'
import type { ForwardProxyResolver } from '../lib/index'
import { deferred } from './helpers/deferred'

test('CONNECT early data: bytes the client sends while the destination is still being reached arrive after the 200, in order', async (t) => {
  const destination = await startTcpDestination(t)
  const lookupStarted = deferred()
  const lookupAnswered = deferred()
  const resolver: ForwardProxyResolver = async () => {
    lookupStarted.resolve()
    await lookupAnswered.promise
    return [{ address: '127.0.0.1', family: 4 }]
  }
  const proxy = await startProxy(t, { resolver })
  const socket = connect(proxy.port, '127.0.0.1')
  socket.on('error', () => {})
  t.teardown(() => socket.destroy())
  let received = ''
  socket.on('data', (chunk: Buffer) => { received += chunk.toString() })
  socket.write(`CONNECT slow.test:${destination.port} HTTP/1.1\r\nHost: x\r\n\r\nfirst|`)
  await lookupStarted.promise
  await new Promise<void>((resolve) => socket.write('second|', () => resolve()))
  await new Promise<void>((resolve) => socket.end('third', () => resolve()))
  lookupAnswered.resolve()
  const upstream = await destination.nextConnection()
  t.equal(await readAll(upstream), 'first|second|third', 'every early byte, in order, then the client FIN')
  upstream.end('done')
  await new Promise((resolve) => socket.once('close', resolve))
  t.equal(received, 'HTTP/1.1 200 Connection Established\r\n\r\ndone')
})

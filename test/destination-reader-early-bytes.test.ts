import { test } from 'tap'
import { connect, createServer, type AddressInfo, type OnReadOpts } from 'node:net'
import { PassThrough } from 'node:stream'
import { createDestinationReader } from './helpers/internals'
import { deferred } from './helpers/deferred'

test('destination reader: bytes and an end read before the relay starts are kept, then written in order and the output ended', async (t) => {
  const server = createServer((socket) => socket.end('early bytes'))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const reader = createDestinationReader()
  const readBeforeStart = deferred()
  // The same reader, observed: resolves once the first read has happened with no relay started.
  const onread: OnReadOpts = {
    buffer: reader.onread.buffer,
    callback: (count, buffer) => {
      const goOn = reader.onread.callback(count, buffer)
      readBeforeStart.resolve()
      return goOn
    }
  }
  const socket = connect({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, allowHalfOpen: true, onread })
  t.teardown(() => socket.destroy())
  await readBeforeStart.promise

  const output = new PassThrough()
  const received: Buffer[] = []
  output.on('data', (chunk: Buffer) => received.push(chunk))
  const ended = new Promise<void>((resolve) => output.once('end', () => resolve()))
  let counted = 0
  reader.start(socket, output, (count) => { counted += count })
  await ended
  t.equal(Buffer.concat(received).toString(), 'early bytes')
  t.equal(counted, 11, 'the early bytes are counted')
})

import { test } from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import type { Socket } from 'node:net'
import { startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { startTcpDestination } from './helpers/tcp-destination'
import { borrowRelayBuffer, borrowedRelayBuffers, returnRelayBuffer, RELAY_BUFFER_SIZE } from './helpers/internals'

/** Resolves once `socket` has received `expected` bytes in all; resolves with their SHA-256. */
function receive (socket: Socket, already: Buffer, expected: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256').update(already)
    let length = already.length
    const onData = (chunk: Buffer): void => {
      hash.update(chunk)
      length += chunk.length
      if (length >= expected) done()
    }
    const done = (): void => {
      socket.removeListener('data', onData)
      socket.removeListener('close', onClose)
      resolve(hash.digest('hex'))
    }
    const onClose = (): void => reject(new Error(`closed after ${length} of ${expected} bytes`))
    socket.on('data', onData)
    socket.once('close', onClose)
    if (length >= expected) done()
  })
}

test('opaque tunnels, memory: streaming tunnels borrow a relay buffer while they stream and hold none once idle; bytes arrive intact', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t)
  const SIZE = 16 * 1024 * 1024
  const tunnels = await Promise.all([0, 1, 2].map(async () => {
    const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
    return { tunnel, upstream: await destination.nextConnection() }
  }))
  await Promise.all(tunnels.map(async ({ tunnel, upstream }) => {
    const payload = randomBytes(SIZE)
    upstream.write(payload)
    t.equal(await receive(tunnel.socket, tunnel.rest, SIZE), createHash('sha256').update(payload).digest('hex'), 'intact')
    // A small message after the stream: the read that carries it does not fill the buffer.
    upstream.write('ping')
    t.equal(await receive(tunnel.socket, Buffer.alloc(0), 4), createHash('sha256').update('ping').digest('hex'))
  }))
  t.equal(borrowedRelayBuffers(), 0, 'three open, idle tunnels hold no relay buffer')
  for (const { tunnel } of tunnels) tunnel.socket.end()
})

test('opaque tunnels, memory: at most 64 relay buffers are lent at once, and returned ones are lent again', async (t) => {
  const lent: Buffer[] = []
  for (let buffer = borrowRelayBuffer(); buffer !== undefined; buffer = borrowRelayBuffer()) lent.push(buffer)
  t.equal(lent.length, 64)
  t.equal(lent[0]?.length, RELAY_BUFFER_SIZE)
  const first = lent.pop() as Buffer
  returnRelayBuffer(first, true)
  t.equal(borrowRelayBuffer(), first, 'a returned buffer is reused')
  returnRelayBuffer(first, false)
  t.not(borrowRelayBuffer(), first, 'a buffer returned with a write pending is not reused')
  t.equal(borrowedRelayBuffers(), 64)
})

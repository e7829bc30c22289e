import { test } from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { startTcpDestination } from './helpers/tcp-destination'
import { settled } from './helpers/settled'

const SIZE = 64 * 1024 * 1024
const CHUNK = 1024 * 1024

test('tunnel relay backpressure, downstream: a client that stops reading stops the destination; every byte arrives intact', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t)
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  const upstream = await destination.nextConnection()
  tunnel.socket.pause()

  const payload = randomBytes(SIZE)
  let flushed = 0
  for (let offset = 0; offset < SIZE; offset += CHUNK) {
    upstream.write(payload.subarray(offset, offset + CHUNK), () => { flushed += CHUNK })
  }
  upstream.end()
  // Wait until the flow has stalled: a proxy that ignored backpressure would pull everything in
  // before it did.
  await settled(() => flushed)
  t.ok(flushed < SIZE / 4, `only ${flushed / CHUNK} of 64 MiB left the destination while the client was not reading`)

  const hash = createHash('sha256')
  let received = tunnel.rest.length
  hash.update(tunnel.rest)
  tunnel.socket.on('data', (chunk: Buffer) => { hash.update(chunk); received += chunk.length })
  const ended = new Promise<void>((resolve) => tunnel.socket.once('end', () => resolve()))
  tunnel.socket.resume()
  await ended
  t.equal(received, SIZE)
  t.equal(hash.digest('hex'), createHash('sha256').update(payload).digest('hex'), 'intact')
  tunnel.socket.end()
})

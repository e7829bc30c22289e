import { test } from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { startTcpDestination } from './helpers/tcp-destination'
import { settled } from './helpers/settled'

const SIZE = 64 * 1024 * 1024
const CHUNK = 1024 * 1024

test('tunnel relay backpressure: a destination that stops reading stops the client; nothing is buffered whole; every byte arrives', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t)
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  const upstream = await destination.nextConnection()
  upstream.pause()

  const payload = randomBytes(SIZE)
  let flushed = 0
  for (let offset = 0; offset < SIZE; offset += CHUNK) {
    tunnel.socket.write(payload.subarray(offset, offset + CHUNK), () => { flushed += CHUNK })
  }
  tunnel.socket.end()
  // Wait until the flow has stalled: a proxy that ignored backpressure would pull the whole
  // payload in before it did.
  await settled(() => flushed)
  t.ok(flushed < SIZE / 4, `only ${(flushed / 1048576).toFixed(0)} of 64 MiB left the client while the destination was not reading`)

  const hash = createHash('sha256')
  let received = 0
  upstream.on('data', (chunk: Buffer) => { hash.update(chunk); received += chunk.length })
  upstream.resume()
  await new Promise<void>((resolve) => upstream.once('end', () => resolve()))
  t.equal(received, SIZE)
  t.equal(hash.digest('hex'), createHash('sha256').update(payload).digest('hex'), 'intact')
  upstream.end()
})

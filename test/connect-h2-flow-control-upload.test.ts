import { test } from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { connectHttp2, openHttp2Tunnel, startHttp2Proxy } from './helpers/http2-proxy'
import { startTcpDestination } from './helpers/tcp-destination'
import { settled } from './helpers/settled'

const SIZE = 64 * 1024 * 1024
const CHUNK = 1024 * 1024
// Loopback socket buffers plus the HTTP/2 windows: far below the 64 MiB attempted.
const BOUND = 16 * 1024 * 1024

test('flow control, upload: a destination that does not read stalls the client\'s writes on its tunnel stream, so the proxy holds a bounded amount; then every byte arrives intact', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startHttp2Proxy(t)
  const session = await connectHttp2(t, proxy)
  const tunnel = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`)
  const upstream = await destination.nextConnection()
  upstream.pause()

  const payload = randomBytes(SIZE)
  let flushed = 0
  let drained = false
  tunnel.stream.once('drain', () => { drained = true })
  for (let offset = 0; offset < SIZE; offset += CHUNK) {
    tunnel.stream.write(payload.subarray(offset, offset + CHUNK), () => { flushed += CHUNK })
  }
  const stalledAt = await settled(() => flushed)
  // Whatever the proxy buffers came off the client's stream, so this bounds it too.
  t.ok(stalledAt < BOUND, `the client's writes stall: ${stalledAt / CHUNK} MiB of 64 left it while the destination was not reading`)
  t.ok(tunnel.stream.writableLength > SIZE - BOUND, `the rest waits in the client (${(tunnel.stream.writableLength / CHUNK).toFixed(1)} MiB)`)
  t.notOk(drained, 'no drain while the destination is not reading')

  const hash = createHash('sha256')
  let received = 0
  upstream.on('data', (chunk: Buffer) => { hash.update(chunk); received += chunk.length })
  const ended = new Promise((resolve) => upstream.once('end', resolve))
  const drain = new Promise((resolve) => tunnel.stream.once('drain', resolve))
  upstream.resume()
  await drain
  t.pass('the client\'s stream drains once the destination reads')
  tunnel.stream.end()
  await ended
  t.equal(received, SIZE)
  t.equal(hash.digest('hex'), createHash('sha256').update(payload).digest('hex'), 'byte-exact')
  upstream.end()
})

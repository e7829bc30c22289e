import { test } from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import type { Duplex } from 'node:stream'
import { startHttp2TunnelRig } from './helpers/http2-proxy'
import { settled } from './helpers/settled'

const SIZE = 64 * 1024 * 1024
const CHUNK = 1024 * 1024
// Loopback socket buffers plus the HTTP/2 windows: far below the 64 MiB attempted.
const BOUND = 16 * 1024 * 1024

/** The two ends of an HTTP/2 CONNECT tunnel: the client's stream and the destination's socket. */
interface Ends { client: Duplex, destination: Duplex }

const directions: Array<{ name: string, writer: keyof Ends, reader: keyof Ends, drained: string }> = [
  {
    name: 'flow control, download: a client that does not read its tunnel stream stalls the destination\'s writes, so the proxy holds a bounded amount; then every byte arrives intact',
    writer: 'destination',
    reader: 'client',
    drained: 'the destination drains once the client reads'
  },
  {
    name: 'flow control, upload: a destination that does not read stalls the client\'s writes on its tunnel stream, so the proxy holds a bounded amount; then every byte arrives intact',
    writer: 'client',
    reader: 'destination',
    drained: 'the client\'s stream drains once the destination reads'
  }
]

for (const { name, writer: writerEnd, reader: readerEnd, drained: drainedMessage } of directions) {
  test(name, async (t) => {
    const { open } = await startHttp2TunnelRig(t)
    const { tunnel, upstream } = await open()
    const ends: Ends = { client: tunnel.stream, destination: upstream }
    const writer = ends[writerEnd]
    const reader = ends[readerEnd]
    reader.pause()

    const payload = randomBytes(SIZE)
    let flushed = 0
    let drained = false
    writer.once('drain', () => { drained = true })
    for (let offset = 0; offset < SIZE; offset += CHUNK) {
      writer.write(payload.subarray(offset, offset + CHUNK), () => { flushed += CHUNK })
    }
    const stalledAt = await settled(() => flushed)
    // Whatever the proxy buffers came out of the writer, so this bounds it too.
    t.ok(stalledAt < BOUND, `the ${writerEnd}'s writes stall: ${stalledAt / CHUNK} MiB of 64 left it while the ${readerEnd} was not reading`)
    t.ok(writer.writableLength > SIZE - BOUND, `the rest waits in the ${writerEnd} (${(writer.writableLength / CHUNK).toFixed(1)} MiB)`)
    t.notOk(drained, `no drain while the ${readerEnd} is not reading`)

    const hash = createHash('sha256')
    let received = 0
    reader.on('data', (chunk: Buffer) => { hash.update(chunk); received += chunk.length })
    const ended = new Promise((resolve) => reader.once('end', resolve))
    const drain = new Promise((resolve) => writer.once('drain', resolve))
    reader.resume()
    await drain
    t.pass(drainedMessage)
    writer.end()
    await ended
    t.equal(received, SIZE)
    t.equal(hash.digest('hex'), createHash('sha256').update(payload).digest('hex'), 'byte-exact')
    reader.end()
  })
}

import { test } from 'tap'
import { randomBytes } from 'node:crypto'
import type { ClientHttp2Stream } from 'node:http2'
import type { Socket } from 'node:net'
import { connectHttp2, openHttp2Tunnel, startHttp2Proxy } from './helpers/http2-proxy'
import { startTcpDestination } from './helpers/tcp-destination'

/** Resolves once `total` bytes have arrived on `source`, with exactly those bytes. */
function collect (source: ClientHttp2Stream | Socket, total: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let received = 0
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk)
      received += chunk.length
      if (received >= total) { source.removeListener('data', onData); resolve(Buffer.concat(chunks)) }
    }
    source.on('data', onData)
    source.once('close', () => { if (received < total) reject(new Error(`closed after ${received} of ${total} bytes`)) })
  })
}

test('two HTTP/2 CONNECT tunnels on one session carry data at once, both ways, interleaved, byte-exact', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startHttp2Proxy(t)
  const session = await connectHttp2(t, proxy)
  t.equal(session.alpnProtocol, 'h2', 'HTTP/2 negotiated with ALPN on the TLS listener')
  const a = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`)
  const upstreamA = await destination.nextConnection()
  const b = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`)
  const upstreamB = await destination.nextConnection()
  t.same([a.status, b.status], [200, 200])
  t.not(a.stream.id, b.stream.id)
  t.equal(proxy.app.forwardProxy.activeTunnels, 2)

  const CHUNK = 16 * 1024
  const ROUNDS = 32
  const total = CHUNK * ROUNDS
  const payload = { aUp: randomBytes(total), bUp: randomBytes(total), aDown: randomBytes(total), bDown: randomBytes(total) }
  const received = Promise.all([collect(upstreamA, total), collect(upstreamB, total), collect(a.stream, total), collect(b.stream, total)])
  // Interleaved: each round writes a chunk on every side of both tunnels before the next round.
  for (let round = 0; round < ROUNDS; round++) {
    const slice = (buffer: Buffer): Buffer => buffer.subarray(round * CHUNK, (round + 1) * CHUNK)
    a.stream.write(slice(payload.aUp))
    upstreamB.write(slice(payload.bDown))
    b.stream.write(slice(payload.bUp))
    upstreamA.write(slice(payload.aDown))
  }
  const [gotAUp, gotBUp, gotADown, gotBDown] = await received
  t.ok(gotAUp.equals(payload.aUp), 'tunnel A client -> destination byte-exact')
  t.ok(gotBUp.equals(payload.bUp), 'tunnel B client -> destination byte-exact')
  t.ok(gotADown.equals(payload.aDown), 'tunnel A destination -> client byte-exact')
  t.ok(gotBDown.equals(payload.bDown), 'tunnel B destination -> client byte-exact')
  a.stream.close()
  b.stream.close()
})

import { test } from 'tap'
import { randomBytes } from 'node:crypto'
import { startHttp2TunnelRig } from './helpers/http2-proxy'
import { collectBytes } from './helpers/collect-bytes'

test('two HTTP/2 CONNECT tunnels on one session carry data at once, both ways, interleaved, byte-exact', async (t) => {
  const { proxy, session, open } = await startHttp2TunnelRig(t)
  t.equal(session.alpnProtocol, 'h2', 'HTTP/2 negotiated with ALPN on the TLS listener')
  const { tunnel: a, upstream: upstreamA } = await open()
  const { tunnel: b, upstream: upstreamB } = await open()
  t.not(a.stream.id, b.stream.id)
  t.equal(proxy.app.forwardProxy.activeTunnels, 2)

  const CHUNK = 16 * 1024
  const ROUNDS = 32
  const total = CHUNK * ROUNDS
  const payload = { aUp: randomBytes(total), bUp: randomBytes(total), aDown: randomBytes(total), bDown: randomBytes(total) }
  const received = Promise.all([collectBytes(upstreamA, total), collectBytes(upstreamB, total), collectBytes(a.stream, total), collectBytes(b.stream, total)])
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

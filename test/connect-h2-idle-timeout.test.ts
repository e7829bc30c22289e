import { test } from 'tap'
import { startHttp2TunnelRig } from './helpers/http2-proxy'
import { eventually } from './helpers/eventually'

test('TunnelIdleTimeout applies per HTTP/2 stream: the idle tunnel closes while a busy one on the same session goes on', async (t) => {
  const { proxy, session, open } = await startHttp2TunnelRig(t, { limits: { tunnelIdleTimeout: 300 } })
  // Read before the idle tunnel is asked for, so no time its idle timer has already counted
  // (the second tunnel's set-up, on a loaded machine) is left out of the span measured below.
  const askedForIdle = Date.now()
  const { tunnel: idle, upstream: idleUpstream } = await open()
  const { tunnel: busy, upstream: busyUpstream } = await open()
  busyUpstream.on('data', (chunk: Buffer) => busyUpstream.write(chunk))

  let idleStreamClosedAt = 0
  let idleUpstreamEnded = false
  idle.stream.once('close', () => { idleStreamClosedAt = Date.now() })
  idleUpstream.once('end', () => { idleUpstreamEnded = true })
  idleUpstream.resume()
  // Keep the busy tunnel active with a round trip every 50 ms, well inside the timeout, until
  // the idle tunnel is gone on both sides.
  let roundTrips = 0
  while (idleStreamClosedAt === 0 || !idleUpstreamEnded) {
    const echoed = new Promise<Buffer>((resolve) => busy.stream.once('data', resolve))
    busy.stream.write(`ping ${roundTrips}`)
    t.equal((await echoed).toString(), `ping ${roundTrips}`, `round trip ${roundTrips} on the busy tunnel`)
    roundTrips++
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const idleFor = idleStreamClosedAt - askedForIdle
  t.ok(idleFor >= 250, `the idle tunnel closed after ${idleFor} ms, not before the timeout`)
  t.notOk(session.closed || session.destroyed, 'the session stays open')
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 1)
  t.equal(proxy.app.forwardProxy.activeTunnels, 1, 'only the idle tunnel\'s slot was released')

  const echoed = new Promise<Buffer>((resolve) => busy.stream.once('data', resolve))
  busy.stream.write('still here')
  t.equal((await echoed).toString(), 'still here', 'the busy tunnel still relays after the idle one closed')
  busy.stream.close()
})

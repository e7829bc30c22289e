import { test } from 'tap'
import type { EventEmitter } from 'node:events'
import type { ServerHttp2Session } from 'node:http2'
import { startBundledHttp2 } from './helpers/bundled-http2'
import { startCountingDestination } from './helpers/counting-destination'
import { FRAME, connectRawHttp2, frame, headerBlock } from './helpers/raw-http2'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('CONTINUATION flood (CVE-2024-27983): a header block that never ends closes the connection before anything is dialed; the server serves on', async (t) => {
  const destination = await startCountingDestination(t)
  const proxy = await startBundledHttp2(t)
  const attacker = await connectRawHttp2(proxy.port, proxy.ca)
  const junk = headerBlock([['x-junk', 'a'.repeat(100)]])
  const frames = [frame(FRAME.HEADERS, 0, 1, headerBlock([[':method', 'CONNECT'], [':authority', `127.0.0.1:${destination.port}`]]))]
  for (let index = 0; index < 20_000; index++) frames.push(frame(FRAME.CONTINUATION, 0, 1, junk))
  attacker.socket.write(Buffer.concat(frames))
  await attacker.closed
  await expectNothingDialedBefore(t, destination.accepts, 'nothing dialed')
  t.equal(proxy.server.app.forwardProxy.activeTunnels, 0)
  t.equal(await proxy.tunnelStatus(`127.0.0.1:${destination.port}`), 200, 'a new client still gets its tunnel')
})

for (const [name, flood] of [
  ['SETTINGS', () => frame(FRAME.SETTINGS, 0, 0)],
  ['PING', () => frame(FRAME.PING, 0, 0, Buffer.alloc(8))]
] as const) {
  test(`${name} flood: 100,000 frames from a client that never reads the acknowledgements close its connection; the server serves on`, async (t) => {
    const destination = await startCountingDestination(t)
    const proxy = await startBundledHttp2(t)
    const serverSessionClosed = new Promise<void>((resolve) => {
      (proxy.server.app.server as unknown as EventEmitter).once('session', (session: ServerHttp2Session) => session.once('close', () => resolve()))
    })
    const attacker = await connectRawHttp2(proxy.port, proxy.ca)
    attacker.socket.pause()
    attacker.socket.write(Buffer.concat(Array.from({ length: 100_000 }, flood)))
    await serverSessionClosed
    t.pass('the server closed the flooding session while its acknowledgements went unread')
    attacker.socket.resume()
    await attacker.closed
    t.equal(await proxy.tunnelStatus(`127.0.0.1:${destination.port}`), 200, 'a new client still gets its tunnel')
  })
}

import { test } from 'tap'
import { once } from 'node:events'
import { constants } from 'node:http2'
import { startHttp2TunnelRig } from './helpers/http2-proxy'
import { eventually } from './helpers/eventually'

test('a client that resets its HTTP/2 tunnel stream gets the destination connection closed with a TCP RST', async (t) => {
  const { proxy, session, open } = await startHttp2TunnelRig(t)
  const { tunnel, upstream } = await open()
  tunnel.stream.write('before the reset')
  const [first] = await once(upstream, 'data') as [Buffer]
  t.equal(first.toString(), 'before the reset')

  // Whichever comes first: a clean end (a FIN) would let the destination take a cut upload for
  // a complete one, and once it has read the FIN it no longer notices a later RST.
  const outcome = new Promise<string | undefined>((resolve) => {
    upstream.once('error', (error: NodeJS.ErrnoException) => resolve(error.code))
    upstream.once('end', () => resolve('clean end'))
  })
  upstream.resume()
  // With nothing in flight, Node's close() sends END_STREAM and then RST_STREAM(CANCEL).
  tunnel.stream.close(constants.NGHTTP2_CANCEL)
  t.equal(await outcome, 'ECONNRESET', 'the destination sees an abort, not a clean end')
  t.notOk(session.closed || session.destroyed, 'the session is untouched')
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

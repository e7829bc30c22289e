import { test } from 'tap'
import { once } from 'node:events'
import { constants } from 'node:http2'
import { connectHttp2, openHttp2Tunnel, startHttp2Proxy } from './helpers/http2-proxy'
import { startTcpDestination } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'

test('a client that resets its HTTP/2 tunnel stream gets the destination connection closed with a TCP RST', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startHttp2Proxy(t)
  const session = await connectHttp2(t, proxy)
  const tunnel = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`)
  t.equal(tunnel.status, 200)
  const upstream = await destination.nextConnection()
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

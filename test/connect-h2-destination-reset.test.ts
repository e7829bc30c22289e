import { test } from 'tap'
import { once } from 'node:events'
import { constants } from 'node:http2'
import { startHttp2TunnelRig } from './helpers/http2-proxy'
import { eventually } from './helpers/eventually'

test('a destination that resets after the 200 gets the HTTP/2 tunnel stream reset with CONNECT_ERROR', async (t) => {
  const { proxy, session, open } = await startHttp2TunnelRig(t)
  const { tunnel, upstream } = await open()
  // Some traffic first, so the reset comes in the middle of a working tunnel.
  upstream.write('before the reset')
  const [first] = await once(tunnel.stream, 'data') as [Buffer]
  t.equal(first.toString(), 'before the reset')

  let ended = false
  tunnel.stream.on('end', () => { ended = true })
  const closed = new Promise((resolve) => tunnel.stream.once('close', resolve))
  upstream.resetAndDestroy()
  await closed
  t.equal(tunnel.stream.rstCode, constants.NGHTTP2_CONNECT_ERROR, 'RST_STREAM with CONNECT_ERROR, not a clean end')
  t.notOk(ended, 'the client never saw a clean end of the stream')
  t.notOk(session.closed || session.destroyed, 'only the stream was reset, not the session')
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

import { test } from 'tap'
import { constants } from 'node:http2'
import { startHttp2TunnelRig } from './helpers/http2-proxy'
import { readAll } from './helpers/tcp-destination'

test('a destination reset after the client half-closed still reaches the client as CONNECT_ERROR, never as a clean end of a cut download', async (t) => {
  const { open } = await startHttp2TunnelRig(t)
  const { tunnel, upstream } = await open()
  const request = readAll(upstream)
  tunnel.stream.end('GET /big HTTP/1.1\r\nHost: x\r\n\r\n')
  t.equal(await request, 'GET /big HTTP/1.1\r\nHost: x\r\n\r\n', 'the request and the client\'s END_STREAM reached the destination')

  let ended = false
  tunnel.stream.on('end', () => { ended = true })
  const closed = new Promise((resolve) => tunnel.stream.once('close', resolve))
  const head = 'HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial'
  const firstBytes = new Promise<Buffer>((resolve) => tunnel.stream.once('data', resolve))
  upstream.write(head)
  t.equal((await firstBytes).toString(), head)
  // Reset only once those bytes are through: a RST in the same read as data is reported by
  // libuv as a clean EOF, which no proxy on Node can tell apart.
  upstream.resetAndDestroy()
  await closed
  t.equal(tunnel.stream.rstCode, constants.NGHTTP2_CONNECT_ERROR, 'RST_STREAM with CONNECT_ERROR')
  t.notOk(ended, 'no END_STREAM: the client cannot take the cut response for a complete one')
})

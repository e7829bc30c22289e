import { test } from 'tap'
import { constants } from 'node:http2'
import { startHttp2TunnelRig } from './helpers/http2-proxy'
import { readAll } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'

test('one tunnel stream\'s failure never takes down the session: B keeps relaying after A\'s destination reset, and a new stream C opens', async (t) => {
  const { proxy, session, open } = await startHttp2TunnelRig(t)
  let sessionClosed = false
  session.once('close', () => { sessionClosed = true })
  session.once('goaway', () => { sessionClosed = true })

  const { tunnel: a, upstream: upstreamA } = await open()
  const { tunnel: b, upstream: upstreamB } = await open()

  const aClosed = new Promise((resolve) => a.stream.once('close', resolve))
  upstreamA.resetAndDestroy()
  await aClosed
  t.equal(a.stream.rstCode, constants.NGHTTP2_CONNECT_ERROR, 'A is reset with CONNECT_ERROR')

  const echoed = new Promise<Buffer>((resolve) => b.stream.once('data', resolve))
  upstreamB.on('data', (chunk: Buffer) => upstreamB.write(chunk))
  b.stream.write('B still works')
  t.equal((await echoed).toString(), 'B still works', 'B relays both ways after A failed')

  // A new stream C opens a tunnel on the same session.
  const { tunnel: c, upstream: upstreamC } = await open()
  const arrived = readAll(upstreamC)
  c.stream.end('C after the failure')
  t.equal(await arrived, 'C after the failure')

  t.notOk(sessionClosed, 'no GOAWAY, no session close')
  // Closing B (Node sends END_STREAM and RST_STREAM back to back) tears B's tunnel down and
  // gives its slot back; closing C's destination ends C.
  b.stream.close()
  upstreamC.end()
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  t.equal(proxy.app.forwardProxy.activeTunnels, 0, 'every slot released')
})

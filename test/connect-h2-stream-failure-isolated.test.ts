import { test } from 'tap'
import { constants } from 'node:http2'
import { connectHttp2, openHttp2Tunnel, startHttp2Proxy } from './helpers/http2-proxy'
import { readAll, startTcpDestination } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'

test('one tunnel stream\'s failure never takes down the session: B keeps relaying after A\'s destination reset, and a new stream C opens', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startHttp2Proxy(t)
  const session = await connectHttp2(t, proxy)
  let sessionClosed = false
  session.once('close', () => { sessionClosed = true })
  session.once('goaway', () => { sessionClosed = true })

  const a = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`)
  const upstreamA = await destination.nextConnection()
  const b = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`)
  const upstreamB = await destination.nextConnection()
  t.same([a.status, b.status], [200, 200])

  const aClosed = new Promise((resolve) => a.stream.once('close', resolve))
  upstreamA.resetAndDestroy()
  await aClosed
  t.equal(a.stream.rstCode, constants.NGHTTP2_CONNECT_ERROR, 'A is reset with CONNECT_ERROR')

  const echoed = new Promise<Buffer>((resolve) => b.stream.once('data', resolve))
  upstreamB.on('data', (chunk: Buffer) => upstreamB.write(chunk))
  b.stream.write('B still works')
  t.equal((await echoed).toString(), 'B still works', 'B relays both ways after A failed')

  const c = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`)
  t.equal(c.status, 200, 'a new stream C opens a tunnel on the same session')
  const upstreamC = await destination.nextConnection()
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

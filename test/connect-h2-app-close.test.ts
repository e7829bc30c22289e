import { test } from 'tap'
import { connectHttp2, openHttp2Tunnel, startHttp2Proxy } from './helpers/http2-proxy'
import { startTcpDestination } from './helpers/tcp-destination'

test('fastify.close() ends open HTTP/2 tunnels on both sides and closes their session, so it does not hang on it', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startHttp2Proxy(t)
  const session = await connectHttp2(t, proxy)
  const first = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`)
  const firstUpstream = await destination.nextConnection()
  const second = await openHttp2Tunnel(session, `127.0.0.1:${destination.port}`)
  const secondUpstream = await destination.nextConnection()
  t.equal(proxy.app.forwardProxy.activeTunnels, 2)

  const streamsClosed = [first.stream, second.stream].map((stream) => new Promise((resolve) => stream.once('close', resolve)))
  // The test destination allows half-open sockets: the proxy's side ending is what counts.
  const upstreamsEnded = [firstUpstream, secondUpstream].map((socket) => new Promise((resolve) => { socket.once('end', resolve); socket.once('error', resolve) }))
  const sessionClosed = new Promise((resolve) => session.once('close', resolve))
  firstUpstream.resume()
  secondUpstream.resume()
  const started = Date.now()
  // The client keeps its session open: if close() waited for it (Fastify's HTTP/2 session
  // timeout is 72 s) or for the tunnels' 5-minute idle timeout, this test would time out.
  await proxy.app.close()
  const closedIn = Date.now() - started
  await Promise.all([...streamsClosed, ...upstreamsEnded, sessionClosed])
  t.ok(closedIn < 1000, `closed in ${closedIn} ms`)
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

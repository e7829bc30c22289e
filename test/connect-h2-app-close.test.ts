import { test } from 'tap'
import { startHttp2TunnelRig } from './helpers/http2-proxy'

test('fastify.close() ends open HTTP/2 tunnels on both sides and closes their session, so it does not hang on it', async (t) => {
  const { proxy, session, open } = await startHttp2TunnelRig(t)
  const { tunnel: first, upstream: firstUpstream } = await open()
  const { tunnel: second, upstream: secondUpstream } = await open()
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

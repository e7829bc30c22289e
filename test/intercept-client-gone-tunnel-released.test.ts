import { test, type Test } from 'tap'
import { makeInterceptionPki, type InterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll, type InterceptingProxy, type TlsOrigin } from './helpers/intercepting-proxy'
import { http2OverTls, http2Request, rawTlsExchange, startInnerTls, tunnelTransport } from './helpers/intercepted-client'
import { openTunnel } from './helpers/raw-client'
import { eventually } from './helpers/eventually'

// Far longer than the test waits: a slot that comes back did so because the client left.
const TUNNEL_IDLE_TIMEOUT = 600_000

/** An origin and a proxy intercepting every tunnel, with an idle timeout the test never reaches. */
async function start (t: Test): Promise<{ pki: InterceptionPki, origin: TlsOrigin, proxy: InterceptingProxy, target: string }> {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { limits: { tunnelIdleTimeout: TUNNEL_IDLE_TIMEOUT } },
    interception: interceptAll(pki)
  })
  return { pki, origin, proxy, target: `127.0.0.1:${origin.port}` }
}

const WAYS_TO_LEAVE = ['closes its TCP connection (FIN, no close_notify)', 'resets its TCP connection'] as const

for (const protocol of ['h2', 'http/1.1'] as const) {
  for (const way of WAYS_TO_LEAVE) {
    test(`an intercepted tunnel carrying ${protocol} is closed and its slot released when the client ${way} after a request`, async (t) => {
      const { pki, origin, proxy, target } = await start(t)
      const tunnel = await openTunnel(proxy.port, target)
      t.equal(tunnel.status, 200)
      const socket = await startInnerTls(tunnelTransport(tunnel), { ca: pki.operatorCa.cert, alpn: [protocol] })
      t.equal(socket.alpnProtocol, protocol)
      if (protocol === 'h2') {
        const session = await http2OverTls(t, socket, target)
        t.equal((await http2Request(session, { ':path': '/first', ':authority': target })).status, 200)
      } else {
        socket.write(`GET /first HTTP/1.1\r\nHost: ${target}\r\n\r\n`)
        await new Promise((resolve) => socket.once('data', resolve))
      }
      t.equal(origin.requests.length, 1, 'the request went through')
      t.equal(proxy.app.forwardProxy.activeTunnels, 1, 'the tunnel holds a slot')

      if (way === 'resets its TCP connection') tunnel.socket.resetAndDestroy()
      else tunnel.socket.end()
      await eventually(() => proxy.app.forwardProxy.activeTunnels === 0, 10_000)
      t.pass('slot released when the client left')
    })
  }
}

test('an intercepted HTTP/1.1 exchange still ends normally when the client asks to close', async (t) => {
  const { pki, proxy, target } = await start(t)
  const tunnel = await openTunnel(proxy.port, target)
  const socket = await startInnerTls(tunnelTransport(tunnel), { ca: pki.operatorCa.cert })
  const response = await rawTlsExchange(socket, `GET /bye HTTP/1.1\r\nHost: ${target}\r\nConnection: close\r\n\r\n`)
  t.equal(response.status, 200)
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0, 10_000)
})

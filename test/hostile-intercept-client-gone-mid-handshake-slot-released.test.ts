import { test } from 'tap'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'
import { openTunnel } from './helpers/raw-client'
import { eventually } from './helpers/eventually'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

// Far longer than the test waits: a slot that comes back did so because the client left.
const HANDSHAKE_TIMEOUT = 600_000

const PARTIAL_CLIENT_HELLO = Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03])
// A handshake record whose body is not a ClientHello at all.
const TLS_GARBAGE = Buffer.concat([Buffer.from([0x16, 0x03, 0x01, 0x00, 0x20]), Buffer.alloc(32, 0xa5)])

test('for interception: a client that leaves before finishing its TLS handshake (nothing sent, or half a ClientHello) gives its tunnel slot back at once, not at handshakeTimeout', async (t) => {
  const pki = await makeInterceptionPki(t)
  const proxy = await startInterceptingProxy(t, pki, {
    interception: { certificateProvider: staticProvider(pki), selector: { shouldIntercept: () => true }, handshakeTimeout: HANDSHAKE_TIMEOUT }
  })
  for (const [name, early] of [['nothing sent', Buffer.alloc(0)], ['half a ClientHello', PARTIAL_CLIENT_HELLO]] as const) {
    const tunnel = await openTunnel(proxy.port, 'example.com:443')
    t.equal(tunnel.status, 200, name)
    if (early.length > 0) tunnel.socket.write(early)
    t.equal(proxy.app.forwardProxy.activeTunnels, 1, `${name}: the tunnel holds a slot`)
    tunnel.socket.end()
    await eventually(() => proxy.app.forwardProxy.activeTunnels === 0, 10_000)
    t.pass(`${name}: slot released when the client left`)
  }
})

test('interception TLS garbage: a handshake record that is no ClientHello closes the tunnel; nothing reaches the origin and the slot comes back', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, {
    interception: { certificateProvider: staticProvider(pki), selector: { shouldIntercept: () => true }, handshakeTimeout: HANDSHAKE_TIMEOUT }
  })
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${origin.port}`)
  t.equal(tunnel.status, 200)
  let received = Buffer.alloc(0)
  tunnel.socket.on('data', (chunk: Buffer) => { received = Buffer.concat([received, chunk]) })
  const closed = new Promise((resolve) => tunnel.socket.once('close', resolve))
  tunnel.socket.write(TLS_GARBAGE)
  await closed
  t.notOk(/HTTP\/1\.1 \d{3}/.test(received.toString('latin1')), 'no HTTP answer, at most a TLS alert')
  await expectNothingDialedBefore(t, origin.accepts, 'nothing forwarded')
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0, 10_000)
})

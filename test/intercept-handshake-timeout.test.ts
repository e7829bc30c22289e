import { connect } from 'node:net'
import { test } from 'tap'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, staticProvider } from './helpers/intercepting-proxy'
import { openTunnel } from './helpers/raw-client'
import { eventually } from './helpers/eventually'

test('HandshakeTimeout: an intercepted tunnel whose client sends no ClientHello (or only part of one) is closed at handshakeTimeout and gives its slot back', async (t) => {
  const pki = await makeInterceptionPki(t)
  const proxy = await startInterceptingProxy(t, pki, {
    interception: { certificateProvider: staticProvider(pki), selector: { shouldIntercept: () => true }, handshakeTimeout: 300 }
  })
  for (const early of [Buffer.alloc(0), Buffer.from([0x16, 0x03, 0x01, 0x02])]) {
    const opened = Date.now()
    const tunnel = await openTunnel(proxy.port, 'example.com:443')
    t.equal(tunnel.status, 200)
    if (early.length > 0) tunnel.socket.write(early)
    t.equal(proxy.app.forwardProxy.activeTunnels, 1)
    await new Promise((resolve) => tunnel.socket.once('close', resolve))
    const elapsed = Date.now() - opened
    t.ok(elapsed >= 290, `closed after the timeout, not before (${elapsed} ms)`)
    await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  }
})

test('HandshakeTimeout: the timeout covers a slow certificate provider, whose signal is aborted', async (t) => {
  const pki = await makeInterceptionPki(t)
  let aborted: Promise<void> | undefined
  const proxy = await startInterceptingProxy(t, pki, {
    interception: {
      selector: { shouldIntercept: () => true },
      handshakeTimeout: 200,
      certificateProvider: {
        getCertificate: (_destination, signal) => {
          aborted = new Promise((resolve) => signal.addEventListener('abort', () => resolve()))
          return new Promise(() => {})
        }
      }
    }
  })
  const socket = connect(proxy.port, '127.0.0.1')
  socket.on('error', () => {})
  socket.resume()
  socket.write('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n')
  socket.write(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00]))
  await new Promise((resolve) => socket.once('close', resolve))
  await aborted
  t.pass('the provider\'s signal was aborted and the tunnel closed')
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
})

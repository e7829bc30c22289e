import { connect as tlsConnect, type TLSSocket } from 'node:tls'
import { test } from 'tap'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'
import { openTunnel } from './helpers/raw-client'

function originIssuer (socket: TLSSocket): string {
  return String(socket.getPeerCertificate().issuer.CN)
}

test('a tunnel the selector declines is relayed opaquely: the client talks TLS with the origin itself and the provider is never asked', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const provider = staticProvider(pki)
  let selectorCalls = 0
  const proxy = await startInterceptingProxy(t, pki, {
    interception: { certificateProvider: provider, selector: { shouldIntercept: () => { selectorCalls++; return false } } }
  })
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${origin.port}`)
  t.teardown(() => tunnel.socket.destroy())
  t.equal(tunnel.status, 200)
  const socket = await new Promise<TLSSocket>((resolve, reject) => {
    const tls = tlsConnect({ socket: tunnel.socket, ca: pki.destinationCa.cert, checkServerIdentity: () => undefined })
    tls.once('secureConnect', () => resolve(tls))
    tls.once('error', reject)
  })
  t.equal(socket.authorized, true, 'the destination CA (not the operator CA) validates the certificate seen')
  t.equal(originIssuer(socket), 'Interception Test Destination CA')
  t.equal(selectorCalls, 1)
  t.same(provider.asked, [])
  socket.destroy()
})

test('without a selector nothing is intercepted', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const provider = staticProvider(pki)
  const proxy = await startInterceptingProxy(t, pki, { interception: { certificateProvider: provider } })
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${origin.port}`)
  t.teardown(() => tunnel.socket.destroy())
  t.equal(tunnel.status, 200)
  const socket = await new Promise<TLSSocket>((resolve, reject) => {
    const tls = tlsConnect({ socket: tunnel.socket, ca: pki.destinationCa.cert, checkServerIdentity: () => undefined })
    tls.once('secureConnect', () => resolve(tls))
    tls.once('error', reject)
  })
  t.equal(originIssuer(socket), 'Interception Test Destination CA')
  t.same(provider.asked, [])
  socket.destroy()
})

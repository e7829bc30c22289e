import { connect as tlsConnect, type TLSSocket } from 'node:tls'
import { test, type Test } from 'tap'
import { makeInterceptionPki, type InterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'
import { openTunnel } from './helpers/raw-client'

/**
 * Opens a CONNECT tunnel to the origin and runs a TLS handshake inside it that trusts only the
 * destination CA; resolves with the client's TLS socket (destroyed at teardown).
 */
async function tlsThroughTunnel (t: Test, pki: InterceptionPki, proxyPort: number, originPort: number): Promise<TLSSocket> {
  const tunnel = await openTunnel(proxyPort, `127.0.0.1:${originPort}`)
  t.teardown(() => tunnel.socket.destroy())
  t.equal(tunnel.status, 200)
  const socket = await new Promise<TLSSocket>((resolve, reject) => {
    const tls = tlsConnect({ socket: tunnel.socket, ca: pki.destinationCa.cert, checkServerIdentity: () => undefined })
    tls.once('secureConnect', () => resolve(tls))
    tls.once('error', reject)
  })
  t.teardown(() => socket.destroy())
  return socket
}

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
  const socket = await tlsThroughTunnel(t, pki, proxy.port, origin.port)
  t.equal(socket.authorized, true, 'the destination CA (not the operator CA) validates the certificate seen')
  t.equal(originIssuer(socket), 'Interception Test Destination CA')
  t.equal(selectorCalls, 1)
  t.same(provider.asked, [])
})

test('without a selector nothing is intercepted', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const provider = staticProvider(pki)
  const proxy = await startInterceptingProxy(t, pki, { interception: { certificateProvider: provider } })
  const socket = await tlsThroughTunnel(t, pki, proxy.port, origin.port)
  t.equal(originIssuer(socket), 'Interception Test Destination CA')
  t.same(provider.asked, [])
})

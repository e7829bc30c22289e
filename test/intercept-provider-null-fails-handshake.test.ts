import { test } from 'tap'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin } from './helpers/intercepting-proxy'
import { HANDSHAKE_FAILURE_ALERT, startInnerTls, tunnelTransport } from './helpers/intercepted-client'
import { openTunnel } from './helpers/raw-client'
import { eventually } from './helpers/eventually'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('a certificate provider returning null fails the client\'s TLS handshake with a handshake_failure alert; the tunnel closes and gives its slot back', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, {
    interception: { certificateProvider: { getCertificate: () => null }, selector: { shouldIntercept: () => true } }
  })
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${origin.port}`)
  t.equal(tunnel.status, 200)
  const closed = new Promise((resolve) => tunnel.socket.once('close', resolve))
  const error = await startInnerTls(tunnelTransport(tunnel), { ca: pki.operatorCa.cert })
    .then(() => null, (caught: unknown) => caught as Error & { code?: string })
  // The proxy's handshake_failure alert, whichever way the client's OpenSSL spells it.
  t.match(error?.code, HANDSHAKE_FAILURE_ALERT, 'the handshake fails with a handshake_failure alert')
  await closed
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  await expectNothingDialedBefore(t, origin.accepts, 'nothing was forwarded')
})

test('a certificate provider that throws fails the handshake the same way (and the error is not shown to the client)', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, {
    interception: { certificateProvider: { getCertificate: async () => { throw new Error('EST service down: secret detail') } }, selector: { shouldIntercept: () => true } }
  })
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${origin.port}`)
  let received = ''
  tunnel.socket.on('data', (chunk: Buffer) => { received += chunk.toString('latin1') })
  const error = await startInnerTls(tunnelTransport(tunnel), { ca: pki.operatorCa.cert })
    .then(() => null, (caught: unknown) => caught as Error & { code?: string })
  // The proxy's handshake_failure alert, whichever way the client's OpenSSL spells it.
  t.match(error?.code, HANDSHAKE_FAILURE_ALERT, 'the handshake fails with a handshake_failure alert')
  t.notMatch(received, /secret/)
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
})

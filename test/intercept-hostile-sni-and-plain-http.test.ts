import { test } from 'tap'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider, interceptAll } from './helpers/intercepting-proxy'
import { rawTlsExchange, startInnerTls, tunnelTransport } from './helpers/intercepted-client'
import { openTunnel } from './helpers/raw-client'
import { eventually } from './helpers/eventually'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('CONNECT to one host then SNI naming another: the provider is only ever asked for the CONNECT target, and a request for the SNI name gets 421', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const provider = staticProvider(pki)
  const proxy = await startInterceptingProxy(t, pki, {
    interception: { certificateProvider: provider, selector: { shouldIntercept: () => true } }
  })
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${origin.port}`)
  const socket = await startInnerTls(tunnelTransport(tunnel), { ca: pki.operatorCa.cert, servername: 'b.example' }).catch((error: Error) => error)
  // The leaf names 127.0.0.1, so a client checking b.example refuses it: exactly the point.
  t.match(socket, { code: 'ERR_TLS_CERT_ALTNAME_INVALID' })
  t.same(provider.asked, [`127.0.0.1:${origin.port}`], 'no certificate was asked for b.example')

  const again = await openTunnel(proxy.port, `127.0.0.1:${origin.port}`)
  const inner = await startInnerTls(tunnelTransport(again), { ca: pki.operatorCa.cert })
  const response = await rawTlsExchange(inner, 'GET / HTTP/1.1\r\nHost: b.example\r\nConnection: close\r\n\r\n')
  t.equal(response.status, 421)
  await expectNothingDialedBefore(t, origin.accepts, 'nothing was forwarded')
})

test('plain HTTP or an SSH banner on a tunnel chosen for interception is closed, never forwarded', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  for (const bytes of [`GET / HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\n\r\n`, 'SSH-2.0-OpenSSH_9.2p1\r\n']) {
    const tunnel = await openTunnel(proxy.port, `127.0.0.1:${origin.port}`)
    t.equal(tunnel.status, 200)
    let received = ''
    tunnel.socket.on('data', (chunk: Buffer) => { received += chunk.toString('latin1') })
    const closed = new Promise((resolve) => tunnel.socket.once('close', resolve))
    tunnel.socket.write(bytes)
    await closed
    t.notMatch(received, /HTTP\/1\.1 [0-9]{3}/, `${JSON.stringify(bytes.slice(0, 12))}: closed without an HTTP answer`)
  }
  await expectNothingDialedBefore(t, origin.accepts, 'nothing was forwarded')
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
})

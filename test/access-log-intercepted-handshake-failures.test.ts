import { connect as http2Connect } from 'node:http2'
import { connect as tlsConnect } from 'node:tls'
import type { AddressInfo } from 'node:net'
import Fastify, { type FastifyInstance } from 'fastify'
import { test } from 'tap'
import { forwardProxy, tlsInterception, type ForwardProxyCertificateProvider } from '../lib/index'
import { makeInterceptionPki } from './helpers/interception-pki'
import { interceptAll, startInterceptingProxy, startTlsOrigin } from './helpers/intercepting-proxy'
import { startInnerTls, tunnelTransport } from './helpers/intercepted-client'
import { openHttp2Tunnel } from './helpers/http2-proxy'
import { openTunnel } from './helpers/raw-client'
import { capturedLog } from './helpers/captured-log'
import { eventually } from './helpers/eventually'
import { LOOPBACK_TEST_POLICY } from './helpers/servers'

const NO_CERTIFICATE: ForwardProxyCertificateProvider = { getCertificate: () => null }

/** The access line of the one tunnel the proxy logged. */
async function tunnelLine (log: ReturnType<typeof capturedLog>): Promise<Record<string, unknown> | undefined> {
  await eventually(() => log.access().some((line) => line.kind === 'tunnel'))
  return log.access().find((line) => line.kind === 'tunnel')
}

test('an intercepted tunnel whose client handshake failed says why on its access line: handshake-refused (no certificate), handshake-error (the client spoke something other than TLS), handshake-timeout', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const target = `127.0.0.1:${origin.port}`

  const refusedLog = capturedLog()
  const refusing = await startInterceptingProxy(t, pki, {
    server: { logger: refusedLog.logger },
    interception: { certificateProvider: NO_CERTIFICATE, selector: { shouldIntercept: () => true } }
  })
  const refused = await openTunnel(refusing.port, target)
  await startInnerTls(tunnelTransport(refused), { ca: pki.operatorCa.cert }).catch(() => {})
  t.match(await tunnelLine(refusedLog), { tunnel: 'intercepted', closeReason: 'handshake-refused' })

  const distrustLog = capturedLog()
  const distrusted = await startInterceptingProxy(t, pki, { server: { logger: distrustLog.logger }, interception: interceptAll(pki) })
  const plain = await openTunnel(distrusted.port, target)
  // Plain HTTP where a ClientHello belongs: the proxy's side of the handshake fails.
  plain.socket.write(`GET / HTTP/1.1\r\nHost: ${target}\r\n\r\n`)
  t.teardown(() => plain.socket.destroy())
  t.match(await tunnelLine(distrustLog), { tunnel: 'intercepted', closeReason: 'handshake-error', handshakeError: 'ERR_SSL_HTTP_REQUEST' }, 'plain HTTP is named as such')

  // A client that offers only TLS 1.1 gets a protocol_version alert; the line names why.
  const oldLog = capturedLog()
  const modern = await startInterceptingProxy(t, pki, { server: { logger: oldLog.logger }, interception: interceptAll(pki) })
  const outdated = await openTunnel(modern.port, target)
  const oldClient = tlsConnect({ socket: outdated.socket, ca: pki.operatorCa.cert, minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' })
  await new Promise<void>((resolve) => { oldClient.once('secureConnect', () => { t.fail('TLS 1.1 was accepted'); resolve() }); oldClient.once('error', () => resolve()) })
  oldClient.destroy()
  t.match(await tunnelLine(oldLog), { tunnel: 'intercepted', closeReason: 'handshake-error', handshakeError: 'ERR_SSL_UNSUPPORTED_PROTOCOL' }, 'an outdated TLS version is named')

  const slowLog = capturedLog()
  const waiting = await startInterceptingProxy(t, pki, { server: { logger: slowLog.logger }, interception: { ...interceptAll(pki), handshakeTimeout: 300 } })
  const silent = await openTunnel(waiting.port, target)
  t.teardown(() => silent.socket.destroy())
  t.match(await tunnelLine(slowLog), { tunnel: 'intercepted', closeReason: 'handshake-timeout' })

  // A handshake that completes still closes as closed.
  const fineLog = capturedLog()
  const fine = await startInterceptingProxy(t, pki, { server: { logger: fineLog.logger }, interception: interceptAll(pki) })
  const tunnel = await openTunnel(fine.port, target)
  const inner = await startInnerTls(tunnelTransport(tunnel), { ca: pki.operatorCa.cert })
  inner.end()
  const fineLine = await tunnelLine(fineLog)
  t.match(fineLine, { tunnel: 'intercepted', closeReason: 'closed' })
  t.notOk(fineLine !== undefined && 'handshakeError' in fineLine, 'no handshakeError on a tunnel whose handshake completed')
})

test('over an HTTP/2 CONNECT stream too: a refused handshake is handshake-refused on the tunnel\'s line', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const log = capturedLog()
  const app = Fastify({
    logger: log.logger,
    http2: true,
    https: { allowHTTP1: true, key: pki.interceptionLeaf.key, cert: pki.interceptionLeaf.cert }
  }) as unknown as FastifyInstance
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY })
  await app.register(tlsInterception, {
    trustedDestinationCa: pki.destinationCa.cert,
    certificateProvider: NO_CERTIFICATE,
    selector: { shouldIntercept: () => true }
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const session = http2Connect(`https://127.0.0.1:${(app.server.address() as AddressInfo).port}`, { ca: pki.operatorCa.cert })
  session.on('error', () => {})
  t.teardown(() => session.destroy())
  const tunnel = await openHttp2Tunnel(session, `127.0.0.1:${origin.port}`)
  t.equal(tunnel.status, 200)
  await startInnerTls(tunnel.stream, { ca: pki.operatorCa.cert }).catch(() => {})
  t.match(await tunnelLine(log), { tunnel: 'intercepted', closeReason: 'handshake-refused' })
})

import { test } from 'tap'
import { createEstCertificateProvider } from '../lib/index'
import { HANDSHAKE_FAILURE_ALERT, startInnerTls, tunnelTransport } from './helpers/intercepted-client'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin } from './helpers/intercepting-proxy'
import { openTunnel } from './helpers/raw-client'
import { eventually } from './helpers/eventually'
import { startOpensslEstResponder } from './helpers/openssl-est-responder'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const PASSWORD = 'allowlist-secret-93be'

test('EST allowlist refusal: the responder answers 403, getCertificate rejects, the intercepted handshake fails, and the proxy\'s log line carries the EST status and no secret', async (t) => {
  const responder = await startOpensslEstResponder(t, { username: 'proxy', password: PASSWORD, allowlist: ['allowed.example'] })
  const provider = createEstCertificateProvider({ url: responder.url, ca: responder.ca.cert, username: 'proxy', password: PASSWORD })
  t.teardown(() => provider.close())

  await t.rejects(provider.getCertificate({ host: 'denied.example', port: 443 }, AbortSignal.timeout(5000)), {
    name: 'ForwardProxyEstError', reason: 'est_refused', estStatus: 403, message: /HTTP status 403: host denied\.example is not on this CA's allowlist/
  })
  t.ok(await provider.getLeaf('allowed.example'), 'a host on the allowlist is enrolled')

  // Through the proxy: 127.0.0.1 is not on the allowlist.
  const logs: string[] = []
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, {
    server: { logger: { level: 'info', stream: { write: (line: string) => { logs.push(line) } } } },
    interception: { certificateProvider: provider, selector: { shouldIntercept: () => true } }
  })
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${origin.port}`)
  t.equal(tunnel.status, 200)
  const error = await startInnerTls(tunnelTransport(tunnel), { ca: Buffer.from(responder.ca.cert) })
    .then(() => null, (caught: unknown) => caught as Error & { code?: string })
  // The proxy's handshake_failure alert, whichever way the client's OpenSSL spells it.
  t.match(error?.code, HANDSHAKE_FAILURE_ALERT, 'no certificate, no handshake (no fallback)')
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  await expectNothingDialedBefore(t, origin.accepts, 'nothing was forwarded')

  const line = logs.find((entry) => entry.includes('certificate provider failed'))
  t.ok(line, 'the failure is logged')
  t.match(line, /HTTP status 403/, 'with the EST status')
  t.match(line, /127\.0\.0\.1 is not on this CA's allowlist/, 'and the service\'s reason')
  const token = Buffer.from(`proxy:${PASSWORD}`).toString('base64')
  for (const entry of logs) {
    t.notMatch(entry, PASSWORD, 'no password in any log line')
    t.notMatch(entry, token, 'no Authorization value in any log line')
    t.notMatch(entry, /PRIVATE KEY/, 'no key in any log line')
  }
})

import { test } from 'tap'
import { X509Certificate } from 'node:crypto'
import type { PeerCertificate } from 'node:tls'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { startHttpsOrigin, startInterceptedPath } from './helpers/https-destination'
import type { ForwardProxyDestination, TlsInterceptionOptions } from '../lib/index'

test('checkDestinationCertificate sees the certificate, the default check\'s error and the destination, and can accept a pinned self-signed certificate', async (t) => {
  const fixture = await makeSelfSignedCertificate(t.testdir())
  const pinned = new X509Certificate(fixture.cert).fingerprint256
  const origin = await startHttpsOrigin(t, { cert: fixture.cert, key: fixture.key })
  const calls: Array<{ fingerprint: string, code: unknown, destination: ForwardProxyDestination }> = []
  const tls: TlsInterceptionOptions = {
    checkDestinationCertificate (certificate: PeerCertificate, error, destination) {
      calls.push({ fingerprint: certificate.fingerprint256, code: (error as { code?: unknown } | null)?.code, destination })
      return certificate.fingerprint256 === pinned
    }
  }
  const forwarder = await startInterceptedPath(t, origin.port, tls)

  const res = await forwarder.request('/pinned')
  t.equal(res.statusCode, 200)
  t.equal(await res.body.text(), 'ok /pinned')
  t.same(calls, [{ fingerprint: pinned, code: 'DEPTH_ZERO_SELF_SIGNED_CERT', destination: { host: '127.0.0.1', port: origin.port } }])
})

import { test } from 'tap'
import { rootCertificates } from 'node:tls'
import { ForwardProxyOptionsError, type ForwardProxyDestinationCertificateCheck } from '../lib/index'
import { resolveDestinationTlsSettings } from './helpers/internals'

test('destination TLS options are checked when built: a trustedDestinationCa that is not PEM, a corrupt certificate, or a check that is not a function fails with the option named', async (t) => {
  const cases: Array<[string, () => unknown]> = [
    ['trustedDestinationCa[0]', () => resolveDestinationTlsSettings({ trustedDestinationCa: 'not a certificate' })],
    ['trustedDestinationCa[1]', () => resolveDestinationTlsSettings({ trustedDestinationCa: [rootCertificates[0] ?? '', Buffer.from('x')] })],
    ['trustedDestinationCa[0]', () => resolveDestinationTlsSettings({ trustedDestinationCa: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' })],
    ['checkDestinationCertificate', () => resolveDestinationTlsSettings({ checkDestinationCertificate: true as unknown as ForwardProxyDestinationCertificateCheck })]
  ]
  for (const [option, build] of cases) {
    try {
      build()
      t.fail(`${option}: accepted`)
    } catch (error) {
      t.ok(error instanceof ForwardProxyOptionsError, `${option}: a ForwardProxyOptionsError`)
      t.equal((error as ForwardProxyOptionsError).option, option)
    }
  }
  t.equal(resolveDestinationTlsSettings().check, null, 'default: no operator check')
  t.doesNotThrow(() => resolveDestinationTlsSettings({ trustedDestinationCa: Buffer.from(`${rootCertificates[0] ?? ''}\n${rootCertificates[1] ?? ''}`) }), 'a bundle of several certificates')
})

// A destination named by an IPv6 literal is verified against the IP address entries of its
// certificate, on every Node line: Node 22.23's own tls.checkServerIdentity matches no IPv6
// literal at all (nodejs/node#64144), which would refuse every such destination.
import { X509Certificate } from 'node:crypto'
import type { PeerCertificate } from 'node:tls'
import { test, type Test } from 'tap'
import { certificateDirectory, issueLeaf, makeCa } from './helpers/destination-certificates'
import { startHttpsOrigin, startInterceptedPath } from './helpers/https-destination'

/**
 * The test client's own check of the leaf the proxy mints for `[::1]`: OpenSSL's IP match, not
 * Node's tls.checkServerIdentity, which cannot match an IPv6 literal on Node 22.23.
 */
function clientIpCheck (host: string, certificate: PeerCertificate): Error | undefined {
  const ip = host.replace(/^\[|\]$/g, '')
  return new X509Certificate(certificate.raw).checkIP(ip) === undefined ? new Error(`the proxy's leaf does not name ${ip}`) : undefined
}

/** An HTTPS origin on [::1] with a leaf for `san` from a CA the proxy trusts, and GET /v6 to it through an intercepted tunnel. */
async function throughIpv6Destination (t: Test, san: string) {
  const dir = certificateDirectory(t)
  const ca = await makeCa(dir, 'ca')
  const leaf = await issueLeaf(dir, 'leaf', ca, { san })
  const origin = await startHttpsOrigin(t, { cert: leaf.cert, key: leaf.key }, '::1')
  const forwarder = await startInterceptedPath(t, origin.port, { trustedDestinationCa: ca.cert }, {}, '[::1]', { checkServerIdentity: clientIpCheck })
  return { origin, response: await forwarder.request('/v6') }
}

test('an intercepted request to an IPv6 literal destination ([::1]) is forwarded when the destination\'s certificate names that address', async (t) => {
  const { origin, response } = await throughIpv6Destination(t, 'IP:::1')
  t.equal(response.statusCode, 200, String(response.headers['proxy-status'] ?? ''))
  t.equal(await response.body.text(), 'ok /v6')
  t.equal(origin.requests.length, 1)
})

test('an IPv6 literal destination whose trusted certificate names another address (and a DNS name) gets 502 tls_certificate_error, nothing forwarded', async (t) => {
  const { origin, response } = await throughIpv6Destination(t, 'IP:::2,IP:127.0.0.1,DNS:localhost')
  t.equal(response.statusCode, 502)
  t.equal(response.headers['proxy-status'], 'fastify-forward-proxy; error=tls_certificate_error; details="ERR_TLS_CERT_ALTNAME_INVALID"')
  await response.body.dump()
  t.equal(origin.requests.length, 0)
})

import { test } from 'tap'
import { certificateDirectory, makeCa, issueLeaf } from './helpers/destination-certificates'
import { startHttpsOrigin, startInterceptedPath } from './helpers/https-destination'

test('a destination certificate from trustedDestinationCa is accepted; the request leaves over HTTP/1.1 (ALPN http/1.1) with Host from the target', async (t) => {
  const dir = certificateDirectory(t)
  const ca = await makeCa(dir, 'destination-ca')
  const leaf = await issueLeaf(dir, 'leaf', ca)
  const origin = await startHttpsOrigin(t, { cert: leaf.cert, key: leaf.key, ALPNProtocols: ['h2', 'http/1.1'] })
  const forwarder = await startInterceptedPath(t, origin.port, { trustedDestinationCa: ca.cert })

  const res = await forwarder.request('/a//b;c?q=%2F&r')
  t.equal(res.statusCode, 200)
  t.equal(await res.body.text(), 'ok /a//b;c?q=%2F&r', 'path and query exactly as received')
  const seen = origin.requests[0]
  t.equal(seen?.alpn, 'http/1.1', 'ALPN offered http/1.1 only, though the origin prefers h2')
  t.equal(seen?.servername, false, 'no SNI for an IP literal')
  t.equal(seen?.headers.host, `127.0.0.1:${origin.port}`)
})

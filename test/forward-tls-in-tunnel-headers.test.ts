import { test } from 'tap'
import type { AddressInfo } from 'node:net'
import { openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'
import { certificateDirectory, makeCa, issueLeaf } from './helpers/destination-certificates'
import { startHttpsOrigin, startInterceptedPath } from './helpers/https-destination'

test('forwarding with scheme https (in-tunnel) keeps Max-Forwards untouched, sets Host from the target, adds Via, removes hop-by-hop and Proxy-Authorization', async (t) => {
  const dir = certificateDirectory(t)
  const ca = await makeCa(dir, 'ca')
  const leaf = await issueLeaf(dir, 'leaf', ca)
  const origin = await startHttpsOrigin(t, { cert: leaf.cert, key: leaf.key })
  const forwarder = await startInterceptedPath(t, origin.port, { trustedDestinationCa: ca.cert })

  const head = [
    'OPTIONS /options HTTP/1.1',
    `Host: 127.0.0.1:${origin.port}`,
    'Max-Forwards: 0',
    'Proxy-Authorization: Basic dXNlcjpwYXNz',
    'Connection: close, X-Hop',
    'X-Hop: dropped',
    'X-Kept: kept'
  ]
  const tls = await openInterceptedTls(t, (forwarder.app.server.address() as AddressInfo).port, `127.0.0.1:${origin.port}`, { ca: forwarder.pki.operatorCa.cert })
  const res = await rawTlsExchange(tls, `${head.join('\r\n')}\r\n\r\n`)
  t.equal(res.status, 200, 'OPTIONS with Max-Forwards 0 is forwarded, not answered by the proxy')
  const seen = origin.requests[0]?.headers
  t.equal(seen?.['max-forwards'], '0')
  t.equal(seen?.host, `127.0.0.1:${origin.port}`)
  t.equal(seen?.via, '1.1 fastify-forward-proxy')
  t.equal(seen?.['proxy-authorization'], undefined)
  t.equal(seen?.['x-hop'], undefined)
  t.equal(seen?.['x-kept'], 'kept')
})

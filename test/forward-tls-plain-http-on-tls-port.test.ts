import { test } from 'tap'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { startInterceptedPath } from './helpers/https-destination'

test('a destination speaking plain HTTP on the TLS port gets 502 tls_protocol_error, and never sees a request', async (t) => {
  const requests: string[] = []
  const plain = createServer((req, res) => { requests.push(req.url ?? ''); res.end('plain') })
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { plain.closeAllConnections(); plain.close() })
  const forwarder = await startInterceptedPath(t, (plain.address() as AddressInfo).port)

  const res = await forwarder.request('/')
  t.equal(res.statusCode, 502)
  t.equal(res.headers['proxy-status'], 'fastify-forward-proxy; error=tls_protocol_error; details="ERR_SSL_WRONG_VERSION_NUMBER"')
  await res.body.dump()
  t.same(requests, [])
})

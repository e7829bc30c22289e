import { test } from 'tap'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { interceptEverything } from './helpers/intercepted-forwarding'

test('inside an intercepted tunnel, a destination speaking plain HTTP on its port gets 502 tls_protocol_error', async (t) => {
  const plain = createServer((_req, res) => res.end('plain'))
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { plain.closeAllConnections(); plain.close() })
  const setup = await interceptEverything(t)

  const res = await setup.get((plain.address() as AddressInfo).port)
  t.equal(res.status, 502)
  t.equal(res.proxyStatus, 'fastify-forward-proxy; error=tls_protocol_error; details="ERR_SSL_WRONG_VERSION_NUMBER"')
})

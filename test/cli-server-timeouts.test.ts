import { test } from 'tap'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { startConfiguredServer } from './helpers/cli-server'

interface Timeouts { headersTimeout?: number, requestTimeout?: number, keepAliveTimeout?: number }

test('server: every listener (first, second, TLS, HTTP/2 first and second) gets the documented timeouts: headers 30 s, request none, keep-alive 5 s', async (t) => {
  const dir = t.testdir()
  await makeSelfSignedCertificate(dir)
  const tls = { cert: 'cert.pem', key: 'key.pem' }
  for (const listen of [
    [{ host: '127.0.0.1', port: 0 }, { host: '127.0.0.1', port: 0 }, { host: '127.0.0.1', port: 0, tls }],
    [{ host: '127.0.0.1', port: 0, tls }, { host: '127.0.0.1', port: 0 }],
    // Node's HTTP/2 server takes the HTTP/1.1 timeouts as properties, not as options.
    [{ host: '127.0.0.1', port: 0, tls, http2: true }, { host: '127.0.0.1', port: 0, tls, http2: true }]
  ]) {
    const server = await startConfiguredServer(t, { listen }, dir)
    t.equal(server.servers.length, listen.length)
    t.equal(server.servers[0], server.app.server)
    for (const [i, s] of server.servers.entries()) {
      const { headersTimeout, requestTimeout, keepAliveTimeout } = s as Timeouts
      t.same({ headersTimeout, requestTimeout, keepAliveTimeout }, { headersTimeout: 30_000, requestTimeout: 0, keepAliveTimeout: 5_000 }, server.urls[i] ?? '')
    }
  }
})

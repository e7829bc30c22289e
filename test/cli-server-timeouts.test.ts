import { test } from 'tap'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { startConfiguredServer } from './helpers/cli-server'

test('server: every listener (first, second, TLS) gets the documented timeouts: headers 30 s, request none, keep-alive 5 s', async (t) => {
  const dir = t.testdir()
  await makeSelfSignedCertificate(dir)
  const tls = { cert: 'cert.pem', key: 'key.pem' }
  for (const listen of [
    [{ host: '127.0.0.1', port: 0 }, { host: '127.0.0.1', port: 0 }, { host: '127.0.0.1', port: 0, tls }],
    [{ host: '127.0.0.1', port: 0, tls }, { host: '127.0.0.1', port: 0 }]
  ]) {
    const server = await startConfiguredServer(t, { listen }, dir)
    t.equal(server.servers.length, listen.length)
    t.equal(server.servers[0], server.app.server)
    for (const [i, s] of server.servers.entries()) {
      t.same({ headersTimeout: s.headersTimeout, requestTimeout: s.requestTimeout, keepAliveTimeout: s.keepAliveTimeout },
        { headersTimeout: 30_000, requestTimeout: 0, keepAliveTimeout: 5_000 }, server.urls[i] ?? '')
    }
  }
})

import { X509Certificate } from 'node:crypto'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { connect, createServer } from 'node:tls'
import { test } from 'tap'
import { createEstCertificateProvider } from '../lib/index'
import { fixtureDirectory, opensslVerify, writeFixture } from './helpers/ca-fixtures'
import { startOpensslEstResponder } from './helpers/openssl-est-responder'

test('EST interop: the provider enrolls from an independent openssl-CLI responder (Basic auth); the leaf names the host, verifies with openssl and serves a TLS handshake', async (t) => {
  const responder = await startOpensslEstResponder(t, { username: 'proxy', password: 'enroll-pass-7d1f' })
  const provider = createEstCertificateProvider({ url: responder.url, ca: responder.ca.cert, username: 'proxy', password: 'enroll-pass-7d1f' })
  t.teardown(() => provider.close())

  const leaf = await provider.getLeaf('api.example.com')
  t.equal(responder.issued, 1)
  t.equal(responder.authorizations[0], `Basic ${Buffer.from('proxy:enroll-pass-7d1f').toString('base64')}`, 'HTTP Basic sent')
  const x509 = new X509Certificate(leaf.cert)
  t.equal(x509.subjectAltName, 'DNS:api.example.com', 'SAN copied from the PKCS#10 request')
  t.equal(x509.publicKey.asymmetricKeyType, 'ec', 'ECDSA leaf key')
  t.equal(leaf.chain, new X509Certificate(responder.ca.cert).toString(), 'the chain is the /cacerts CA')
  const directory = fixtureDirectory(t)
  t.match(await opensslVerify(['-CAfile', responder.ca.certPath, '-purpose', 'sslserver', writeFixture(directory, 'leaf.pem', leaf.cert)]), /OK/)

  const ipLeaf = await provider.getLeaf('192.0.2.10')
  t.equal(new X509Certificate(ipLeaf.cert).subjectAltName, 'IP Address:192.0.2.10', 'iPAddress SAN for an IP host')

  // A TLS client trusting only the EST CA accepts the provider's secure context for the host.
  const server = createServer({
    SNICallback: (name, done) => {
      provider.getCertificate({ host: name, port: 443 }, AbortSignal.timeout(5000)).then((context) => done(null, context), done)
    }
  }, (socket) => socket.end('hello'))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => server.close())
  const socket = connect({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', servername: 'api.example.com', ca: responder.ca.cert })
  t.teardown(() => socket.destroy())
  await once(socket, 'secureConnect')
  const [data] = await once(socket, 'data') as [Buffer]
  t.equal(data.toString(), 'hello')
  t.equal(responder.issued, 2, 'the handshake used the cached leaf')
})

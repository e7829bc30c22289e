import { test } from 'tap'
import { execFile } from 'node:child_process'
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { makeInterceptionPki } from './helpers/interception-pki'
import { LOOPBACK_ORIGINS, portOf, startConfiguredServer } from './helpers/cli-server'
import { startHttpsOrigin } from './helpers/https-destination'
import { openInterceptedTls } from './helpers/intercepted-client'
import { freshDataDirectory } from './helpers/development-ca-dir'

const run = promisify(execFile)
const mode = (path: string): number => statSync(path).mode & 0o777

test('server: interception without ca creates a development CA in dataDirectory (dir 0700, key 0600, cert 0644) that openssl accepts as a CA and whose leaves openssl verifies', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startHttpsOrigin(t, { cert: pki.originLeaf.cert, key: pki.originLeaf.key })
  const dataDirectory = freshDataDirectory(t)

  // A strict umask must not make the certificate unreadable to the clients that need it.
  const umask = process.umask(0o077)
  const server = await startConfiguredServer(t, {
    listen: [{ host: '127.0.0.1', port: 0 }],
    destinations: LOOPBACK_ORIGINS,
    interception: { hosts: ['127.0.0.1'], trustedDestinationCa: pki.destinationCa.certPath },
    dataDirectory
  }).finally(() => process.umask(umask))
  const certPath = join(dataDirectory, 'ca.pem')
  const keyPath = join(dataDirectory, 'ca.key')
  t.same(server.developmentCa && { certPath: server.developmentCa.certPath, keyPath: server.developmentCa.keyPath, created: server.developmentCa.created },
    { certPath, keyPath, created: true })
  t.equal(mode(dataDirectory), 0o700, 'the data directory is private to the proxy\'s user')
  t.equal(mode(dirname(dataDirectory)), 0o700, 'so is a missing parent it had to create')
  t.equal(mode(keyPath), 0o600, 'the key is readable by the proxy\'s user only')
  t.equal(mode(certPath), 0o644, 'the certificate is public, whatever the umask')
  t.same(readdirSync(dataDirectory).sort(), ['ca.key', 'ca.pem'], 'no temporary file is left behind')
  t.match(readFileSync(keyPath, 'latin1'), /^-----BEGIN PRIVATE KEY-----\n/, 'PKCS#8 PEM, unencrypted')

  const text = (await run('openssl', ['x509', '-noout', '-text', '-in', certPath])).stdout
  t.match(text, /X509v3 Basic Constraints: critical\s+CA:TRUE, pathlen:0/, 'a CA (critical), issuing leaves only')
  t.match(text, /X509v3 Key Usage: critical\s+Certificate Sign, CRL Sign/, 'keyCertSign and cRLSign (critical)')
  t.match(text, /X509v3 Subject Key Identifier:/)
  t.match(text, /Subject: CN = "?fastify-forward-proxy development CA \(/, 'the name says what it is')
  t.match(text, /ASN1 OID: prime256v1/, 'ECDSA P-256')
  t.match(text, /Signature Algorithm: ecdsa-with-SHA256/)
  const serial = /Serial Number:\s*\n?\s*([0-9a-f:]+)/.exec(text)?.[1] ?? ''
  t.ok(serial.replace(/:/g, '').length >= 16, `a random serial of at least 64 bits (${serial})`)
  t.match((await run('openssl', ['verify', '-CAfile', certPath, certPath])).stdout, /: OK/, 'self-signed and valid now')

  const tls = await openInterceptedTls(t, portOf(server.urls[0]), `127.0.0.1:${origin.port}`, { ca: readFileSync(certPath) })
  t.ok(tls.authorized, 'Node trusting only the development CA accepts the leaf')
  const leafPath = join(dirname(dataDirectory), 'leaf.pem')
  const leaf = tls.getPeerCertificate().raw
  writeFileSync(leafPath, `-----BEGIN CERTIFICATE-----\n${leaf.toString('base64')}\n-----END CERTIFICATE-----\n`)
  tls.destroy()
  const verified = await run('openssl', ['verify', '-CAfile', certPath, '-purpose', 'sslserver', '-verify_ip', '127.0.0.1', leafPath])
  t.match(verified.stdout, /leaf\.pem: OK/, 'openssl verify accepts the leaf the proxy presents for 127.0.0.1')
})

import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { X509Certificate } from 'node:crypto'
import { connect, createServer, type ConnectionOptions, type PeerCertificate, type Server } from 'node:tls'
import { test, type Test } from 'tap'
import { createCaCertificateProvider } from '../lib/index'
import type { ForwardProxyCaCertificateProvider } from '../types/certificates'
import { fixtureDirectory, makeCa } from './helpers/ca-fixtures'

/**
 * A TLS server presenting the provider's leaf: for the SNI name when the client sends one,
 * else for `fallbackHost` (clients send no SNI for IP addresses).
 */
async function startTlsServer (t: Test, provider: ForwardProxyCaCertificateProvider, fallbackHost: string, address: string): Promise<number> {
  // A server's default certificate comes from cert/key (it ignores a secureContext option).
  const fallback = await provider.getLeaf(fallbackHost)
  const server: Server = createServer({
    cert: fallback.cert + fallback.chain,
    key: fallback.key,
    SNICallback: (name, done) => {
      provider.getCertificate({ host: name, port: 443 }, AbortSignal.timeout(5000)).then((context) => done(null, context), done)
    }
  }, (socket) => socket.end('hello'))
  server.listen(0, address)
  await once(server, 'listening')
  t.teardown(() => server.close())
  return (server.address() as AddressInfo).port
}

async function handshake (options: { port: number, host: string, servername?: string, ca: string, checkServerIdentity?: ConnectionOptions['checkServerIdentity'] }): Promise<string> {
  const socket = connect({ ...options, ...(options.servername === undefined ? {} : { servername: options.servername }) })
  try {
    await once(socket, 'secureConnect')
    const [data] = await once(socket, 'data') as [Buffer]
    return data.toString()
  } finally {
    socket.destroy()
  }
}

test('a tls.connect client trusting only the CA accepts the leaf for a DNS name (SNI) and checks the name', async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { keyKind: 'rsa-pkcs1' })
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key })
  const port = await startTlsServer(t, provider, '127.0.0.1', '127.0.0.1')
  t.equal(await handshake({ port, host: '127.0.0.1', servername: 'api.example.com', ca: ca.cert }), 'hello', 'accepted for api.example.com')
  t.equal(await handshake({ port, host: '127.0.0.1', servername: 'xn--bcher-kva.example', ca: ca.cert }), 'hello', 'accepted for a punycode name')
  const other = await makeCa(fixtureDirectory(t), { name: 'Other CA' })
  await t.rejects(handshake({ port, host: '127.0.0.1', servername: 'api.example.com', ca: other.cert }), { message: /self-signed certificate in certificate chain|unable to verify/ }, 'a client trusting another CA refuses it')
})

test('a client checking an IPv4 address accepts the leaf issued for it', async (t) => {
  const ca = await makeCa(fixtureDirectory(t))
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key })
  const port = await startTlsServer(t, provider, '127.0.0.1', '127.0.0.1')
  t.equal(await handshake({ port, host: '127.0.0.1', ca: ca.cert }), 'hello')
})

test('a client checking an IPv6 address accepts the leaf issued for it', async (t) => {
  const ca = await makeCa(fixtureDirectory(t))
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key })
  const port = await startTlsServer(t, provider, '::1', '::1')
  // The client matches the address with OpenSSL: Node 22.23's tls.checkServerIdentity matches no
  // IPv6 literal at all (nodejs/node#64144).
  const checkServerIdentity = (host: string, certificate: PeerCertificate): Error | undefined =>
    new X509Certificate(certificate.raw).checkIP(host) === undefined ? new Error(`not issued for ${host}`) : undefined
  t.equal(await handshake({ port, host: '::1', ca: ca.cert, checkServerIdentity }), 'hello')
  const leaf = new X509Certificate((await provider.getLeaf('::1')).cert)
  t.equal(leaf.checkIP('::2'), undefined, 'the leaf names no other address')
})

test('a leaf for one name is refused by a client expecting another (no wildcard, no coalescing)', async (t) => {
  const ca = await makeCa(fixtureDirectory(t))
  const provider = createCaCertificateProvider({ cert: ca.cert, key: ca.key })
  const port = await startTlsServer(t, provider, 'a.example', '127.0.0.1')
  // No SNI: the server presents a.example's leaf; the client wants b.example.
  const socket = connect({
    port,
    host: '127.0.0.1',
    ca: ca.cert,
    checkServerIdentity: (_host, cert) => {
      return cert.subject.CN === 'b.example' ? undefined : new Error(`leaf for ${cert.subject.CN}`)
    }
  })
  const [error] = await once(socket, 'error') as [Error]
  t.match(error.message, 'leaf for a.example')
})

test('leaves of an intermediate CA are accepted by a client trusting only the root (the chain is sent)', async (t) => {
  const directory = fixtureDirectory(t)
  const root = await makeCa(directory, { name: 'Root CA' })
  const intermediate = await makeCa(directory, { name: 'Issuing CA', issuer: root, keyKind: 'rsa-pkcs1' })
  const provider = createCaCertificateProvider({ cert: intermediate.cert, key: intermediate.key })
  const port = await startTlsServer(t, provider, '127.0.0.1', '127.0.0.1')
  t.equal(await handshake({ port, host: '127.0.0.1', servername: 'deep.example', ca: root.cert }), 'hello')
})

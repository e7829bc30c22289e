import { X509Certificate } from 'node:crypto'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { connect, createServer } from 'node:tls'
import { test } from 'tap'
import { createEstCertificateProvider } from '../lib/index'
import { buildEstService, NOT_HARDENED_NOTICE } from '../examples/est-dev-service/est-service'
import { fixtureDirectory, makeCa } from './helpers/ca-fixtures'

test('examples/est-dev-service: the provider enrolls over real HTTPS with HTTP Basic, and a tls.connect client trusting only the service CA accepts the SecureContext for the host', async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { name: 'EST Dev CA' })
  const notices: string[] = []
  const service = await buildEstService({
    ca: { cert: ca.cert, key: ca.key },
    allowlist: ['api.example.com', '*.internal.example'],
    users: { proxy: 'dev-pass-0c2e' },
    serverName: '127.0.0.1',
    announce: (line) => notices.push(line)
  })
  t.teardown(() => service.close())
  await service.listen({ host: '127.0.0.1', port: 0 })
  t.same(notices, [NOT_HARDENED_NOTICE], 'says on start that it is not a hardened deployment')
  const url = `https://127.0.0.1:${(service.server.address() as AddressInfo).port}`

  const provider = createEstCertificateProvider({ url, ca: ca.cert, username: 'proxy', password: 'dev-pass-0c2e' })
  t.teardown(() => provider.close())
  const context = await provider.getCertificate({ host: 'api.example.com', port: 443 }, AbortSignal.timeout(5000))
  const leaf = await provider.getLeaf('api.example.com')
  t.equal(new X509Certificate(leaf.cert).subjectAltName, 'DNS:api.example.com')
  t.ok(new X509Certificate(leaf.cert).checkIssued(new X509Certificate(ca.cert)), 'issued by the service CA')
  t.equal(new X509Certificate((await provider.getLeaf('db.internal.example')).cert).subjectAltName, 'DNS:db.internal.example', '*.suffix allowlist entry')

  const server = createServer({ cert: leaf.cert + leaf.chain, key: leaf.key, SNICallback: (_name, done) => done(null, context) }, (socket) => socket.end('hello'))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => server.close())
  const socket = connect({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', servername: 'api.example.com', ca: ca.cert })
  t.teardown(() => socket.destroy())
  await once(socket, 'secureConnect')
  t.equal(socket.authorized, true, 'the client trusting only the service CA accepts the leaf for api.example.com')
  const [data] = await once(socket, 'data') as [Buffer]
  t.equal(data.toString(), 'hello')

  await t.rejects(provider.getLeaf('other.example'), { reason: 'est_refused', estStatus: 403, message: /host other\.example is not on this CA's allowlist/ }, 'a host off the allowlist is refused')
  await t.rejects(provider.getLeaf('internal.example'), { name: 'ForwardProxyEstError', estStatus: 403 }, '*.suffix does not match the suffix itself')
  const anonymous = createEstCertificateProvider({ url, ca: ca.cert })
  t.teardown(() => anonymous.close())
  await t.rejects(anonymous.getLeaf('api.example.com'), { name: 'ForwardProxyEstError', reason: 'est_refused', estStatus: 401 }, 'no client authentication, no certificate')
  const wrongPassword = createEstCertificateProvider({ url, ca: ca.cert, username: 'proxy', password: 'wrong-pass' })
  t.teardown(() => wrongPassword.close())
  await t.rejects(wrongPassword.getLeaf('api.example.com'), { name: 'ForwardProxyEstError', estStatus: 401 }, 'a wrong password is refused')
})

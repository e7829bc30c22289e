import { execFile } from 'node:child_process'
import { X509Certificate } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { test } from 'tap'
import { createEstCertificateProvider } from '../lib/index'
import { buildEstService } from '../examples/est-dev-service/est-service'
import { fixtureDirectory, makeCa } from './helpers/ca-fixtures'

const run = promisify(execFile)

test('examples/est-dev-service: a client certificate authenticates the proxy (no Basic); without one the service answers 401', async (t) => {
  const directory = fixtureDirectory(t)
  const ca = await makeCa(directory, { name: 'EST Dev CA' })
  const clientCa = await makeCa(directory, { name: 'EST Client CA' })
  const keyPath = join(directory, 'proxy-client.key')
  const csrPath = join(directory, 'proxy-client.csr')
  const certPath = join(directory, 'proxy-client.pem')
  const extPath = join(directory, 'proxy-client.ext')
  await run('openssl', ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', keyPath])
  await run('openssl', ['req', '-new', '-key', keyPath, '-subj', '/CN=forward-proxy', '-out', csrPath])
  writeFileSync(extPath, 'extendedKeyUsage=clientAuth\n')
  await run('openssl', ['x509', '-req', '-in', csrPath, '-CA', clientCa.certPath, '-CAkey', clientCa.keyPath, '-CAcreateserial', '-days', '2', '-extfile', extPath, '-out', certPath])

  const service = await buildEstService({ ca: { cert: ca.cert, key: ca.key }, allowlist: ['10.0.0.7'], clientCa: clientCa.cert, serverName: '127.0.0.1', announce: () => {} })
  t.teardown(() => service.close())
  await service.listen({ host: '127.0.0.1', port: 0 })
  const url = `https://127.0.0.1:${(service.server.address() as AddressInfo).port}`

  const provider = createEstCertificateProvider({ url, ca: ca.cert, clientCert: readFileSync(certPath), clientKey: readFileSync(keyPath) })
  t.teardown(() => provider.close())
  const leaf = await provider.getLeaf('10.0.0.7')
  t.equal(new X509Certificate(leaf.cert).subjectAltName, 'IP Address:10.0.0.7', 'an IP host gets an iPAddress SAN')

  const anonymous = createEstCertificateProvider({ url, ca: ca.cert })
  t.teardown(() => anonymous.close())
  await t.rejects(anonymous.getLeaf('10.0.0.7'), { name: 'ForwardProxyEstError', reason: 'est_refused', estStatus: 401 })
})

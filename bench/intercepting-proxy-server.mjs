// The proxy under test for the interception scenarios: the built plugin (dist/) in a minimal
// plain-text Fastify app, logging off, intercepting every tunnel with leaves minted from the
// operator CA, and trusting the benchmark's destination CA.
// `node intercepting-proxy-server.mjs <operator-ca.pem> <operator-ca.key> <destination-ca.pem>`
import Fastify from 'fastify'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const { forwardProxy, tlsInterception, createCaCertificateProvider } = createRequire(import.meta.url)('../dist/lib/index.js')
const [caCertPath, caKeyPath, destinationCaPath] = process.argv.slice(2)
const app = Fastify({ logger: false, keepAliveTimeout: 60_000 })
await app.register(forwardProxy, { destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' } })
await app.register(tlsInterception, {
  selector: { shouldIntercept: () => true },
  certificateProvider: createCaCertificateProvider({ cert: readFileSync(caCertPath), key: readFileSync(caKeyPath) }),
  trustedDestinationCa: readFileSync(destinationCaPath)
})
await app.listen({ host: '127.0.0.1', port: 0 })
process.stdout.write(`${app.server.address().port}\n`)

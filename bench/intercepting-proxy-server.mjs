// The proxy under test for the interception scenarios: the built plugin (dist/) in a minimal
// plain-text Fastify app, logging off, intercepting every tunnel with leaves minted from the
// operator CA, and trusting the benchmark's destination CA.
// `node intercepting-proxy-server.mjs <operator-ca.pem> <operator-ca.key> <destination-ca.pem>`
// With BENCH_SECRET_HOSTS (comma-separated host:port), one secret is granted to those hosts, so
// their responses are scrubbed (bench/scrub-cost.mjs).
import Fastify from 'fastify'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const { forwardProxy, tlsInterception, createCaCertificateProvider } = createRequire(import.meta.url)('../dist/lib/index.js')
const [caCertPath, caKeyPath, destinationCaPath] = process.argv.slice(2)
const app = Fastify({ logger: false, keepAliveTimeout: 60_000 })
const secretHosts = process.env.BENCH_SECRET_HOSTS?.split(',').filter((host) => host !== '') ?? []
const secrets = secretHosts.length === 0 ? undefined : [{ name: 'bench', value: process.env.BENCH_SECRET_VALUE ?? 'sk-bench-7f3c9a1e5b2d4c6f8a0b9e7d', hosts: secretHosts, placeholder: 'PLACEHOLDER_BENCH' }]
await app.register(forwardProxy, { destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' }, ...(secrets === undefined ? {} : { secrets }) })
await app.register(tlsInterception, {
  selector: { shouldIntercept: () => true },
  certificateProvider: createCaCertificateProvider({ cert: readFileSync(caCertPath), key: readFileSync(caKeyPath) }),
  trustedDestinationCa: readFileSync(destinationCaPath)
})
await app.listen({ host: '127.0.0.1', port: 0 })
process.stdout.write(`${app.server.address().port}\n`)
// Exit normally on SIGINT, so that a --cpu-prof run writes its profile.
process.once('SIGINT', () => process.exit(0))

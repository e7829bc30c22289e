// The proxy under test: the built plugin (dist/) in a minimal Fastify app, logging off.
import Fastify from 'fastify'
import { createRequire } from 'node:module'

const { forwardProxy } = createRequire(import.meta.url)('../dist/lib/index.js')
const app = Fastify({ logger: false, keepAliveTimeout: 60_000 })
await app.register(forwardProxy, { destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' } })
await app.listen({ host: '127.0.0.1', port: 0 })
process.stdout.write(`${app.server.address().port}\n`)

// The proxy under soak (bench/soak.mjs): the built plugin (dist/) in one Fastify app serving a
// plain HTTP/1.1 listener and an HTTP/2 TLS listener (the bundled server's HTTP/2 listener), with
// TLS interception of `mitm.soak.test` (leaves from an operator CA) and a resolver that maps
// `*.soak.test` to 127.0.0.1 except the fault names: `nx-*` fails (NXDOMAIN) and `slowdns-*`
// never answers (the connect timeout turns it into 504 dns_timeout).
// Started with --expose-gc and an IPC channel; argument: one JSON object
//   { caCert, caKey, destinationCa, listenerCert, listenerKey, tunnelIdleTimeout, connectTimeout }
// (paths). Sends { type: 'ready', plainPort, h2Port }, then answers { type: 'stats' } with
// { type: 'stats', heapUsed, rss, activeTunnels } measured after a full garbage collection.
import Fastify from 'fastify'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { forwardProxy, tlsInterception, createCaCertificateProvider } = require('../dist/lib/index.js')
const { createHttp2Listener } = require('../dist/lib/cli/http2-listener.js')

const options = JSON.parse(process.argv[2])
const gc = globalThis.gc
if (gc === undefined) throw new Error('run with --expose-gc')

async function resolver (hostname, signal) {
  if (!hostname.endsWith('.soak.test')) throw Object.assign(new Error(`${hostname} not found`), { code: 'ENOTFOUND' })
  if (hostname.startsWith('nx-')) throw Object.assign(new Error(`${hostname} not found`), { code: 'ENOTFOUND' })
  if (hostname.startsWith('slowdns-')) {
    // Never answers: only the proxy's own deadline (or the client leaving) ends the wait.
    await new Promise((resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }))
  }
  return [{ address: '127.0.0.1', family: 4 }]
}

const app = Fastify({ logger: false })
await app.register(forwardProxy, {
  destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' },
  limits: { tunnelIdleTimeout: options.tunnelIdleTimeout, connectTimeout: options.connectTimeout, httpActivityTimeout: 15_000 },
  resolver
})
await app.register(tlsInterception, {
  selector: { shouldIntercept: (_request, destination) => destination.host.startsWith('mitm.') },
  certificateProvider: createCaCertificateProvider({ cert: readFileSync(options.caCert), key: readFileSync(options.caKey) }),
  trustedDestinationCa: readFileSync(options.destinationCa)
})
const h2 = createHttp2Listener({ cert: readFileSync(options.listenerCert), key: readFileSync(options.listenerKey) })
app.forwardProxy.attachServer(h2)
await app.listen({ host: '127.0.0.1', port: 0 })
await new Promise((resolve) => h2.listen(0, '127.0.0.1', resolve))

process.on('message', async (message) => {
  if (message.type !== 'stats') return
  // A few collections a turn apart: V8 frees Buffer backing stores on a concurrent sweeper.
  for (let i = 0; i < 3; i++) {
    gc()
    await new Promise((resolve) => setImmediate(resolve))
  }
  const memory = process.memoryUsage()
  process.send({ type: 'stats', heapUsed: memory.heapUsed, rss: memory.rss, activeTunnels: app.forwardProxy.activeTunnels })
})
process.on('disconnect', () => process.exit(0))
process.send({ type: 'ready', plainPort: app.server.address().port, h2Port: h2.address().port })

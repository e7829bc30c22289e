// A reference, not the product: the forward of floor-node-proxy.mjs as a Fastify route, to
// show what Fastify's request path adds. Absolute-form targets are kept aside and the URL
// rewritten to '/'; bodies are left unparsed. `node floor-fastify-proxy.mjs` prints its port.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const Fastify = require('fastify')
const { Pool } = require('undici')
const pools = new Map()
const targets = new WeakMap()

const app = Fastify({
  logger: false,
  keepAliveTimeout: 60_000,
  rewriteUrl: (req) => {
    targets.set(req, req.url)
    return '/'
  }
})
app.removeAllContentTypeParsers()
app.addContentTypeParser('*', (_request, payload, done) => done(null, payload))
app.all('/', async (request, reply) => {
  const url = new URL(targets.get(request.raw))
  let pool = pools.get(url.origin)
  if (pool === undefined) {
    pool = new Pool(url.origin)
    pools.set(url.origin, pool)
  }
  const headers = { ...request.headers }
  delete headers['proxy-connection']
  delete headers.connection
  const response = await pool.request({ method: request.method, path: url.pathname + url.search, headers, body: request.body ?? null })
  reply.code(response.statusCode).headers(response.headers)
  return reply.send(response.body)
})
await app.listen({ host: '127.0.0.1', port: 0 })
process.stdout.write(`${app.server.address().port}\n`)

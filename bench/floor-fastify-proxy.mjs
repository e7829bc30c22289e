// A reference, not the product: the forward of floor-node-proxy.mjs as a Fastify route, to
// show what Fastify's request path adds. Absolute-form targets are kept aside and the URL
// rewritten to '/'; bodies are left unparsed. `node floor-fastify-proxy.mjs` prints its port.
// With FLOOR_REDIS_URL, each request first waits for one Redis round trip, shared by the requests
// of one turn of the event loop (a PING): the least that exact counting in a shared store costs.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const Fastify = require('fastify')
const { Pool } = require('undici')
const pools = new Map()
const targets = new WeakMap()
const roundTrip = process.env.FLOOR_REDIS_URL === undefined ? null : batchedPing(process.env.FLOOR_REDIS_URL)

/** One PING per turn of the event loop for every request that waits on it. */
function batchedPing (url) {
  const { Redis } = require('ioredis')
  const client = new Redis(url)
  let waiting = null
  return () => {
    if (waiting === null) {
      waiting = new Promise((resolve, reject) => setImmediate(() => {
        waiting = null
        client.ping().then(resolve, reject)
      }))
    }
    return waiting
  }
}

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
  if (roundTrip !== null) await roundTrip()
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

// A reference, not the product: the least a Node forward proxy does for an absolute-form
// request. Node's HTTP server, one undici Pool per origin (keep-alive), the head copied with
// two hop-by-hop names dropped, the body streamed. No Fastify, no policy, no hooks.
// `node floor-node-proxy.mjs` prints its port.
import { createServer } from 'node:http'
import { createRequire } from 'node:module'

const { Pool } = createRequire(import.meta.url)('undici')
const pools = new Map()

function poolFor (origin) {
  let pool = pools.get(origin)
  if (pool === undefined) {
    pool = new Pool(origin)
    pools.set(origin, pool)
  }
  return pool
}

const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  const url = new URL(req.url)
  const headers = { ...req.headers }
  delete headers['proxy-connection']
  delete headers.connection
  poolFor(url.origin).request({ method: req.method, path: url.pathname + url.search, headers, body: req.method === 'GET' || req.method === 'HEAD' ? null : req })
    .then((response) => {
      res.writeHead(response.statusCode, response.headers)
      response.body.pipe(res)
    }, () => {
      res.statusCode = 502
      res.end()
    })
})
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`))

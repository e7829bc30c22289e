// A reference, not the product: the least an intercepting proxy built on a Fastify route does
// per request. Node's HTTP server answers every CONNECT 200 at once (no auth, no policy, no
// admission turns), terminates the client's TLS with one fixed certificate, and hands the TLS
// socket to the same server, where one Fastify route forwards each origin-form request to the
// CONNECT target over HTTPS (one undici Pool per target, keep-alive, the destination verified
// against the given CA) and streams the answer back. No hooks, no telemetry, no access log.
// The same route forwards absolute-form http:// requests as bench/floor-fastify-proxy.mjs does,
// so that one process can take both kinds of load, as the bin with interception configured
// does: the floor of its memory after both.
// Like the product, requests wait (100 ms at most) while a tunnel's handshake is under way: without
// that, hey (Go 1.19's Transport) abandons its spare tunnels by the thousand under load, and the
// floor would measure the storm instead of the requests (see limits.tunnelSetupWait).
//
//   node floor-fastify-intercept.mjs LEAF_CERT LEAF_KEY DESTINATION_CA    # prints its port
import { createRequire } from 'node:module'
import { readFileSync } from 'node:fs'
import { TLSSocket, createSecureContext } from 'node:tls'

const require = createRequire(import.meta.url)
const Fastify = require('fastify')
const { Pool } = require('undici')
const [certPath, keyPath, destinationCaPath] = process.argv.slice(2)
const secureContext = createSecureContext({ cert: readFileSync(certPath), key: readFileSync(keyPath) })
const destinationCa = readFileSync(destinationCaPath)
/** The CONNECT target of each terminated TLS socket. */
const targets = new WeakMap()
const pools = new Map()
/** Tunnels between their CONNECT and the end of their handshake, and the requests waiting for none to be. */
let settingUp = 0
const waiting = []

function setUpDone () {
  settingUp--
  if (settingUp === 0) for (const release of waiting.splice(0)) release()
}

function afterSetUps () {
  if (settingUp === 0) return null
  return new Promise((resolve) => {
    waiting.push(resolve)
    setTimeout(resolve, 100).unref()
  })
}

function poolFor (origin) {
  let pool = pools.get(origin)
  if (pool === undefined) {
    pool = new Pool(origin, origin.startsWith('https:') ? { connect: { ca: destinationCa } } : {})
    pools.set(origin, pool)
  }
  return pool
}

/** Where a request goes: its tunnel's CONNECT target over HTTPS, or its absolute-form http:// URL. */
function destinationOf (request) {
  const target = targets.get(request.raw.socket)
  if (target !== undefined) return { origin: `https://${target}`, path: request.url }
  const url = new URL(request.url)
  return { origin: url.origin, path: url.pathname + url.search }
}

const app = Fastify({ logger: false, keepAliveTimeout: 60_000 })
app.removeAllContentTypeParsers()
app.addContentTypeParser('*', (_request, payload, done) => done(null, payload))
app.all('*', async (request, reply) => {
  const setUps = afterSetUps()
  if (setUps !== null) await setUps
  const { origin, path } = destinationOf(request)
  const headers = { ...request.headers }
  delete headers['proxy-connection']
  delete headers.connection
  const response = await poolFor(origin).request({ method: request.method, path, headers, body: request.body ?? null })
  reply.code(response.statusCode).headers(response.headers)
  return reply.send(response.body)
})

await app.ready()
app.server.on('connect', (req, socket, head) => {
  socket.on('error', () => {})
  settingUp++
  let counted = true
  const done = () => { if (counted) { counted = false; setUpDone() } }
  socket.once('close', done)
  socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
  if (head.length > 0) socket.unshift(head)
  const tls = new TLSSocket(socket, { isServer: true, secureContext })
  tls.on('error', () => tls.destroy())
  tls.once('secure', () => {
    done()
    targets.set(tls, req.url)
    app.server.emit('connection', tls)
  })
})
await app.listen({ host: '127.0.0.1', port: 0 })
process.stdout.write(`${app.server.address().port}\n`)

// A reference, not the product: the bare Fastify CONNECT route (bench/floor-fastify-connect.mjs)
// plus a hand-written minimum of the checks and bookkeeping the plugin does for an opaque
// CONNECT, to see what those cost when written as directly as possible. Per CONNECT: an
// onRequest hook that parses the target and checks its port and its IPv4 network (127.0.0.1/32
// only), a tunnel limit, a watch for a client that leaves before its answer; then a dial with a
// connect timer, the 200, a relay with an idle timer refreshed by traffic both ways, tracking of
// the open tunnel (for shutdown) and a counter. It lacks what the plugin's relay also does:
// backpressure, a TCP RST to the other side on a failure, byte counts, the access line and
// metrics, the interception decision, the two turns of the event loop that see a client that
// left with its CONNECT. Not part of the suite; run it beside the floors with a harness that
// alternates them. `node floor-fastify-connect-checked.mjs` prints its port.
import Fastify from 'fastify'
import { routeConnectsThroughFastify } from './fastify-connect-routing.mjs'
import { connect, isIP } from 'node:net'

const MAX_TUNNELS = 10_000
const CONNECT_TIMEOUT_MS = 10_000
const IDLE_TIMEOUT_MS = 60_000
const ALLOWED_NETWORK = ipv4Number('127.0.0.1')

const pendingConnects = new WeakMap()
const openTunnels = new Set()
let tunnels = 0
let tunnelsOpened = 0

function ipv4Number (address) {
  return address.split('.').reduce((number, octet) => number * 256 + Number(octet), 0)
}

const app = Fastify({ logger: false, keepAliveTimeout: 60_000 })
app.addHttpMethod('CONNECT')

app.route({
  method: 'CONNECT',
  url: '/',
  onRequest (request, reply, done) {
    const pending = pendingConnects.get(request.raw)
    const colon = pending.target.lastIndexOf(':')
    const host = pending.target.slice(0, colon)
    const port = Number(pending.target.slice(colon + 1))
    if (!(port >= 1 && port <= 65535) || isIP(host) !== 4 || ipv4Number(host) !== ALLOWED_NETWORK) {
      reply.code(403).send('denied')
      return
    }
    if (tunnels >= MAX_TUNNELS) {
      reply.code(503).send('tunnel limit')
      return
    }
    tunnels++
    pending.host = host
    pending.port = port
    pending.gone = false
    pending.onGone = () => { pending.gone = true }
    pending.socket.on('close', pending.onGone)
    done()
  },
  handler (request, reply) {
    reply.hijack()
    const pending = pendingConnects.get(request.raw)
    const { socket, head } = pending
    let connected = false
    const destination = connect({ host: pending.host, port: pending.port, noDelay: true, allowHalfOpen: true })
    const connectTimer = setTimeout(() => destination.destroy(new Error('connect timeout')), CONNECT_TIMEOUT_MS)
    destination.on('connect', () => {
      clearTimeout(connectTimer)
      socket.removeListener('close', pending.onGone)
      if (pending.gone) {
        destination.destroy()
        tunnels--
        return
      }
      connected = true
      tunnelsOpened++
      openTunnels.add(destination)
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      if (head.length > 0) destination.write(head)
      const idleTimer = setTimeout(() => {
        socket.destroy()
        destination.destroy()
      }, IDLE_TIMEOUT_MS)
      idleTimer.unref()
      socket.on('data', (chunk) => { idleTimer.refresh(); destination.write(chunk) })
      destination.on('data', (chunk) => { idleTimer.refresh(); socket.write(chunk) })
      socket.on('end', () => destination.end())
      destination.on('end', () => socket.end())
      let closedSides = 0
      const sideClosed = () => {
        if (++closedSides < 2) return
        clearTimeout(idleTimer)
        tunnels--
        openTunnels.delete(destination)
      }
      socket.on('close', () => { destination.destroy(); sideClosed() })
      destination.on('close', () => { socket.destroy(); sideClosed() })
    })
    destination.on('error', () => {
      if (connected) {
        socket.destroy()
        return
      }
      clearTimeout(connectTimer)
      tunnels--
      socket.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n')
    })
  }
})

await app.ready()
routeConnectsThroughFastify(app, (req, pending) => pendingConnects.set(req, pending))
await app.listen({ host: '127.0.0.1', port: 0 })
process.stdout.write(`${app.server.address().port}\n`)
process.on('SIGTERM', () => {
  for (const destination of openTunnels) destination.destroy()
  process.stderr.write(`tunnels opened: ${tunnelsOpened}\n`)
  process.exit(0)
})

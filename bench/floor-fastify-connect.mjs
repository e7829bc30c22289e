// A reference, not the product: the least a CONNECT costs when it goes through Fastify's routing,
// as the plugin's CONNECTs must (so that the application's hooks see them). Node's HTTP server
// hands each 'connect' to Fastify with a response bound to its socket, under the path `/`; one
// CONNECT route, no hooks, no policy, no telemetry, dials the target, answers 200 on the socket
// and relays with pipe(). Beside bench/floor-connect-proxy.mjs (no Fastify) in
// bench/connect-cost.mjs. `node floor-fastify-connect.mjs` prints its port.
import Fastify from 'fastify'
import { routeConnectsThroughFastify } from './fastify-connect-routing.mjs'
import { connect } from 'node:net'

const targets = new WeakMap()
const app = Fastify({ logger: false, keepAliveTimeout: 60_000 })
app.addHttpMethod('CONNECT')

app.route({
  method: 'CONNECT',
  url: '/',
  handler (request, reply) {
    reply.hijack()
    const { target, socket, head } = targets.get(request.raw)
    const colon = target.lastIndexOf(':')
    let connected = false
    const destination = connect({ host: target.slice(0, colon).replace(/^\[(.*)\]$/, '$1'), port: Number(target.slice(colon + 1)), noDelay: true }, () => {
      connected = true
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      if (head.length > 0) destination.write(head)
      destination.pipe(socket)
      socket.pipe(destination)
    })
    destination.on('error', () => {
      if (!connected) socket.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n')
      else socket.destroy()
    })
    socket.on('close', () => destination.destroy())
  }
})

await app.ready()
routeConnectsThroughFastify(app, (req, pending) => targets.set(req, pending))
await app.listen({ host: '127.0.0.1', port: 0 })
process.stdout.write(`${app.server.address().port}\n`)

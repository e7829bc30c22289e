// A reference, not the product: the least a Node HTTP server does for a CONNECT. Node's HTTP
// server with a 'connect' listener that dials the target, answers 200 once connected, and
// relays both ways with pipe(); 502 when the dial fails. No Fastify, no policy, no hooks, no
// timers. The floor of bench/connect-cost.mjs and of the per-request suite's CONNECT rows
// (BENCH_SUITE=per-request node bench/compare.mjs). `node floor-connect-proxy.mjs` prints its port.
import { createServer } from 'node:http'
import { connect } from 'node:net'

const server = createServer({ keepAliveTimeout: 60_000 }, (_req, res) => {
  res.statusCode = 405
  res.end()
})

server.on('connect', (req, client, head) => {
  client.on('error', () => {})
  const target = req.url
  const colon = target.lastIndexOf(':')
  const host = target.slice(0, colon).replace(/^\[(.*)\]$/, '$1')
  const port = Number(target.slice(colon + 1))
  let connected = false
  const destination = connect({ host, port, noDelay: true }, () => {
    connected = true
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
    if (head.length > 0) destination.write(head)
    destination.pipe(client)
    client.pipe(destination)
  })
  destination.on('error', () => {
    if (!connected) client.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n')
    else client.destroy()
  })
  client.on('close', () => destination.destroy())
})

server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`))

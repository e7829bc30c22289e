// Benchmark origin: a plain Node HTTP server on loopback. /small answers 13 bytes, /big 64 MiB.
import { createServer } from 'node:http'

const small = Buffer.from('hello, world\n')
const big = Buffer.alloc(64 * 1024 * 1024, 'x')
const server = createServer((req, res) => {
  const body = req.url === '/big' ? big : small
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': body.length })
  res.end(body)
})
server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`))

// Benchmark origin on loopback. /small answers 13 bytes, /big 64 MiB.
// `node origin.mjs` is plain HTTP; `node origin.mjs tls <key.pem> <cert.pem>` is HTTPS (HTTP/1.1).
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'

const small = Buffer.from('hello, world\n')
const big = Buffer.alloc(64 * 1024 * 1024, 'x')
const answer = (req, res) => {
  const body = req.url === '/big' ? big : small
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': body.length })
  res.end(body)
}
const [variant, keyPath, certPath] = process.argv.slice(2)
const server = variant === 'tls'
  ? createHttpsServer({ key: readFileSync(keyPath), cert: readFileSync(certPath) }, answer)
  : createServer(answer)
server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`))

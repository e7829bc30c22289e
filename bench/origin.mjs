// Benchmark origin on loopback. /small answers 13 bytes, /big 64 MiB, /sse a text/event-stream
// whose first event is written at once and which ends after 1 s (a proxy that buffers it shows
// a first-byte latency of about 1 s).
// `node origin.mjs` is plain HTTP; `node origin.mjs tls <key.pem> <cert.pem>` is HTTPS (HTTP/1.1).
// ORIGIN_HOST (default 127.0.0.1) and ORIGIN_PORT (default 0: a free port) set the address; the
// port is printed on stdout. ORIGIN_DELAY_MS (default 0) delays every /small answer by that many
// milliseconds, like a destination across a network.
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'

const small = Buffer.from('hello, world\n')
const big = Buffer.alloc(64 * 1024 * 1024, 'x')
const SSE_LIFETIME_MS = 1000
const DELAY_MS = Number(process.env.ORIGIN_DELAY_MS ?? 0)
const answer = (req, res) => {
  if (DELAY_MS > 0 && req.url === '/small') {
    const timer = setTimeout(() => respond(req, res), DELAY_MS)
    res.once('close', () => clearTimeout(timer))
    return
  }
  respond(req, res)
}
const respond = (req, res) => {
  if (req.url === '/sse') {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    res.write('data: first\n\n')
    const timer = setTimeout(() => res.end('data: last\n\n'), SSE_LIFETIME_MS)
    res.once('close', () => clearTimeout(timer))
    return
  }
  const body = req.url === '/big' ? big : small
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': body.length })
  res.end(body)
}
const [variant, keyPath, certPath] = process.argv.slice(2)
const server = variant === 'tls'
  ? createHttpsServer({ key: readFileSync(keyPath), cert: readFileSync(certPath) }, answer)
  : createServer(answer)
server.keepAliveTimeout = 300_000
server.headersTimeout = 300_000
server.requestTimeout = 0
server.listen(Number(process.env.ORIGIN_PORT ?? 0), process.env.ORIGIN_HOST ?? '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`))

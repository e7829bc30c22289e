// The proxy under test: the built plugin (dist/) in a minimal Fastify app, logging off.
// `node proxy-server.mjs` listens in plain text (HTTP/1.1). `node proxy-server.mjs tls <key> <cert>
// [initialWindowSize] [connectionWindowSize]` creates the app with `http2: true` and
// `https: { allowHTTP1: true }` (HTTP/2 and HTTP/1.1 CONNECT on one TLS port); the optional
// numbers raise the HTTP/2 receive windows the proxy advertises (SETTINGS_INITIAL_WINDOW_SIZE
// for each stream, and session.setLocalWindowSize for each session's connection window).
import Fastify from 'fastify'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const { forwardProxy } = createRequire(import.meta.url)('../dist/lib/index.js')
const [variant, keyPath, certPath, streamWindow, connectionWindow] = process.argv.slice(2)
const tls = variant === 'tls'
const app = tls
  ? Fastify({
    logger: false,
    keepAliveTimeout: 60_000,
    http2: true,
    https: {
      allowHTTP1: true,
      key: readFileSync(keyPath),
      cert: readFileSync(certPath),
      ...(streamWindow ? { settings: { initialWindowSize: Number(streamWindow) } } : {})
    }
  })
  : Fastify({ logger: false, keepAliveTimeout: 60_000 })
if (tls && connectionWindow) app.server.on('session', (session) => session.setLocalWindowSize(Number(connectionWindow)))
await app.register(forwardProxy, { destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' } })
await app.listen({ host: '127.0.0.1', port: 0 })
process.stdout.write(`${app.server.address().port}\n`)

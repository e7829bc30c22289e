'use strict'
// An application that embeds the plugin as a user would: CommonJS, `fastify` and
// `fastify-forward-proxy` from the folder's own node_modules (fresh-install.test.ts copies this
// file into a scratch folder with a fresh `npm install` and runs it with node from there).
// Usage: node app.js settings.json. Prints one line `fresh-install-app {"plain":...,"http2":...,"loaded":[...]}`
// once both listeners are bound.

const { readFileSync } = require('node:fs')
const { createSecureServer } = require('node:http2')
const Fastify = require('fastify')
const {
  forwardProxy,
  tlsInterception,
  createCaCertificateProvider,
  createHostListSelector,
  createHeaderRulesTransform
} = require('fastify-forward-proxy')

const settings = JSON.parse(readFileSync(process.argv[2], 'utf8'))

/** What the application's onRequest hook saw of each CONNECT (served at GET /connects). */
const connects = []

async function main () {
  const app = Fastify({ logger: false })

  app.addHook('onRequest', async (request) => {
    if (request.method !== 'CONNECT') return
    connects.push({
      httpVersion: request.raw.httpVersion,
      url: request.url,
      originalUrl: request.originalUrl,
      proxyDestination: request.proxyDestination
    })
  })
  app.get('/healthz', async () => ({ status: 'ok' }))
  app.get('/connects', async () => connects)

  await app.register(forwardProxy, {
    auth: { users: settings.users },
    destinations: settings.destinations
  })
  await app.register(tlsInterception, {
    selector: createHostListSelector(settings.interceptedHosts),
    certificateProvider: createCaCertificateProvider({ cert: readFileSync(settings.ca.cert), key: readFileSync(settings.ca.key) }),
    trustedDestinationCa: readFileSync(settings.trustedDestinationCa),
    transforms: [createHeaderRulesTransform(settings.headers)]
  })

  // A second listener, TLS with HTTP/2 and HTTP/1.1, serving the same app and proxy.
  const secure = createSecureServer({ allowHTTP1: true, cert: readFileSync(settings.tls.cert), key: readFileSync(settings.tls.key) })
  app.forwardProxy.attachServer(secure)
  app.addHook('onClose', (_instance, done) => { secure.close(() => done()) })

  await app.listen({ host: '127.0.0.1', port: 0 })
  await new Promise((resolve) => secure.listen(0, '127.0.0.1', resolve))
  console.log('fresh-install-app ' + JSON.stringify({
    plain: 'http://127.0.0.1:' + app.server.address().port,
    http2: 'https://127.0.0.1:' + secure.address().port,
    // Where the two packages were loaded from, so the test can tell they are the scratch folder's.
    loaded: [require.resolve('fastify'), require.resolve('fastify-forward-proxy')]
  }))

  const close = () => { app.close().then(() => process.exit(0), () => process.exit(1)) }
  process.once('SIGTERM', close)
  process.once('SIGINT', close)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})

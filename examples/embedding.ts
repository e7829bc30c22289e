// A minimal embedding: one Fastify app that serves its own routes and is a forward proxy on the
// same port. Run it with `npm run example:embedding` (it builds, then runs
// dist/examples/embedding.js); PROXY_HOST and PROXY_PORT choose the address (default
// 127.0.0.1:8080, port 0 for any free port), printed in the "Server listening at" log line.
import Fastify from 'fastify'
import { forwardProxy } from 'fastify-forward-proxy'

async function main (): Promise<void> {
  const app = Fastify({ logger: true })

  // The app's own route; origin-form requests reach it, proxy requests never do .
  app.get('/healthz', async () => ({ status: 'ok' }))

  // App hooks run before the proxy and see proxy requests too: check request.proxyDestination.
  app.addHook('preHandler', async (request) => {
    if (request.proxyDestination !== null) {
      request.log.info({ user: request.proxyUser?.name, destination: request.proxyDestination }, 'proxy request')
    }
  })

  await app.register(forwardProxy, {
    auth: { users: { alice: 's3cret' } },
    destinations: { allowedHosts: ['*.example.com', 'example.org'], allowedPorts: [80, 443] },
    limits: { maxConcurrentTunnels: 1000, tunnelIdleTimeout: 120_000 }
  })

  await app.listen({ host: process.env.PROXY_HOST ?? '127.0.0.1', port: Number(process.env.PROXY_PORT ?? 8080) })
}

void main()

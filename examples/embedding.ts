// A minimal embedding: one Fastify app that serves its own routes and is a forward proxy on the
// same port. Run with `npx tsx examples/embedding.ts` or compile it with the package.
import Fastify from 'fastify'
import { forwardProxy } from '../lib/index'

async function main (): Promise<void> {
  const app = Fastify({ logger: true })

  // The app's own route; origin-form requests reach it, proxy requests never do (SPEC 4.5.1).
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

  await app.listen({ host: '127.0.0.1', port: 8080 })
}

void main()

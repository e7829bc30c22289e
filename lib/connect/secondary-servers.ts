// The one place that reaches into Fastify's private state: the extra servers it binds when it
// listens on a name with several addresses. test/secondary-servers.test.ts fails if a Fastify
// release moves them.

import type { FastifyInstance } from 'fastify'
import type { ProxyServer } from './listener'

// The description of the symbol under which Fastify 5 keeps those servers (lib/symbols.js).
const SERVER_BINDINGS = 'fastify.serverBindings'

/**
 * The extra servers Fastify binds when it listens on a name with several addresses
 * (`localhost`), known once it listens. Fastify keeps them in a private symbol and forwards
 * only `'upgrade'` from them, so without this a CONNECT reaching the IPv6 address would find no
 * listener. Empty when Fastify bound one server, or keeps them elsewhere.
 */
export function secondaryServersOf (fastify: FastifyInstance): ProxyServer[] {
  const symbol = Object.getOwnPropertySymbols(fastify).find((s) => s.description === SERVER_BINDINGS)
  if (symbol === undefined) return []
  const servers = (fastify as unknown as Record<symbol, unknown>)[symbol]
  return Array.isArray(servers) ? servers as ProxyServer[] : []
}

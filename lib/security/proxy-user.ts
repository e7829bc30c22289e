import type { FastifyInstance } from 'fastify'
import type { ForwardProxyUser } from '../../types/user'
import { interceptedTunnelOf } from '../interception/intercepted-tunnels'

// Users set by authentication (or by the application), per request.
const assigned = new WeakMap<object, ForwardProxyUser | null>()

/**
 * Decorates `request.proxyUser`: what authentication (or the application) set on this request;
 * otherwise, inside an intercepted tunnel, the user who opened the tunnel,
 * known before any hook runs, whatever order the application's hooks were added in; else null.
 */
export function decorateProxyUser (fastify: FastifyInstance): void {
  fastify.decorateRequest('proxyUser', {
    getter (this: { raw: object }): ForwardProxyUser | null {
      if (assigned.has(this)) return assigned.get(this) ?? null
      return interceptedTunnelOf(this.raw)?.user ?? null
    },
    setter (this: object, user: ForwardProxyUser | null) {
      assigned.set(this, user)
    }
  })
}

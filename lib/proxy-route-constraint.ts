// The router constraint that lets proxy requests match the proxy route and nothing else.

import type { FastifyInstance } from 'fastify'
import { proxyRequestTargetOf, type RawRequest } from './core/proxy-request'
import { InvalidProxyConstraintError } from './core/usage-errors'

/** Name of the router constraint that sends proxy requests to the proxy route only. */
export const PROXY_CONSTRAINT = 'fastifyForwardProxy'

/** The constraint value every proxy request derives. */
export const PROXY_CONSTRAINT_VALUE = 'proxy'

/**
 * Router constraint that keeps proxy requests away from the application's own routes. A
 * CONNECT, an absolute-form request or a request inside an intercepted tunnel derives the value
 * `proxy`; because the strategy must match when derived, such a request can only match a route
 * that declares the constraint, so `GET http://example.com/healthz` is forwarded, never served
 * by the app's `/healthz`. Origin-form requests to the proxy itself derive nothing and route as
 * usual.
 */
export const proxyRouteConstraint: Parameters<FastifyInstance['addConstraintStrategy']>[0] = {
  name: PROXY_CONSTRAINT,
  mustMatchWhenDerived: true,
  storage () {
    const handlers = new Map<unknown, Parameters<ReturnType<typeof this.storage>['set']>[1]>()
    return {
      get: (value) => handlers.get(value) ?? null,
      set: (value, handler) => { handlers.set(value, handler) }
    }
  },
  deriveConstraint (req) {
    // find-my-way treats undefined as "nothing derived"; its typings do not say so.
    return proxyRequestTargetOf(req as RawRequest) === null ? undefined : PROXY_CONSTRAINT_VALUE
  },
  validate (value: unknown) {
    if (value !== PROXY_CONSTRAINT_VALUE) throw new InvalidProxyConstraintError(PROXY_CONSTRAINT, PROXY_CONSTRAINT_VALUE)
  }
}

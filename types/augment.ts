import type { ForwardProxyUser } from './user'
import type { ForwardProxyDestination } from './destination'
import type { ForwardProxyControl } from './control'

declare module 'fastify' {
  interface FastifyInstance {
    /** Runtime controls of the forward proxy registered on this instance. */
    forwardProxy: ForwardProxyControl
  }

  interface FastifyRequest {
    /**
     * The authenticated proxy user, set when a proxy request (CONNECT or absolute-form) passes
     * authentication; `null` for the application's own requests and when auth is off.
     * Set by the proxy's route-level `onRequest` hook, so visible from `preParsing` onwards.
     */
    proxyUser: ForwardProxyUser | null
    /**
     * Where this proxy request goes: the CONNECT target or the absolute-form authority; `null`
     * for the application's own requests. Set before any application hook runs.
     */
    proxyDestination: ForwardProxyDestination | null
  }
}

export {}

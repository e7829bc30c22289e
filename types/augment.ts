import type { ForwardProxyUser } from './user'
import type { ForwardProxyDestination } from './destination'
import type { ForwardProxyControl } from './control'
import type { ForwardProxyCertificateProviderSource, ForwardProxyInterception, ForwardProxyInterceptionSelectorSource } from './interception'

declare module 'fastify' {
  interface FastifyInstance {
    /** Runtime controls of the forward proxy registered on this instance. */
    forwardProxy: ForwardProxyControl
    /**
     * The interception selector tlsInterception uses when its options name none
     * (without one, nothing is intercepted): decorate it before the server is ready.
     */
    forwardProxyInterceptionSelector?: ForwardProxyInterceptionSelectorSource
    /**
     * The certificate provider tlsInterception uses when its options name none: decorate it
     * before the server is ready, or `fastify.ready()` fails.
     */
    forwardProxyCertificateProvider?: ForwardProxyCertificateProviderSource
  }

  interface FastifyRequest {
    /**
     * The authenticated proxy user, set when a proxy request (CONNECT or absolute-form) passes
     * authentication; `null` for the application's own requests and when auth is off.
     * Set by the proxy's route-level `onRequest` hook, so visible from `preParsing` onwards.
     * Inside an intercepted tunnel it is the user who opened the tunnel, from the first hook on.
     */
    proxyUser: ForwardProxyUser | null
    /**
     * Where this proxy request goes: the CONNECT target or the absolute-form authority; `null`
     * for the application's own requests. Set before any application hook runs.
     */
    proxyDestination: ForwardProxyDestination | null
    /**
     * `{ destination }` for a request that came through an intercepted tunnel, `null`
     * for every other request. Hooks that change intercepted traffic check it first.
     *
     * What the application's hooks leave in `request.headers` is what is forwarded, for
     * intercepted and `http://` requests alike: headers they add, replace or delete
     * are sent so, the rest keep their names, order and repeats as received. Hop-by-hop and
     * `Connection`-listed names are dropped whoever set them; `Content-Length` and `Host` stay
     * the proxy's (a different `Content-Length`, or a `Host` naming another authority than the
     * target, gets 500 `proxy_internal_error` with nothing sent; an equivalent `Host` changes
     * nothing: a request never goes anywhere but its tunnel's or absolute target).
     */
    readonly interception: ForwardProxyInterception | null
    /**
     * For a CONNECT, how its tunnel will be relayed: `'intercept'` (TLS terminated with the
     * operator's CA, the requests inside served by this application) or `'opaque'` (bytes
     * relayed as they are). Decided as the proxy admits the CONNECT, after the application's
     * `onRequest` hooks (which see `null`), by tlsInterception's destination filters and
     * selector (a host a secret is granted to is always intercepted); without tlsInterception,
     * `'opaque'`. Every `preParsing`, `preValidation` and `preHandler` hook sees it, whatever the
     * registration order, and may change it (`'intercept'` needs tlsInterception). `null` for
     * every request that is not a CONNECT. Not to be confused with
     * {@link FastifyRequest.interception}, which describes the tunnel a request came through.
     */
    tunnelMode: 'intercept' | 'opaque' | null
  }
}

export {}

// The errors an application gets for using the plugins in a way they cannot work: registered in
// the wrong order or place, a transform added too late, a tunnel marked for interception with
// none registered, a wrong value for the proxy route's constraint. Made with @fastify/error, as
// Fastify's own errors are: each has its `code`, `name` `FastifyError` and a `statusCode`.

import { createError, type FastifyErrorConstructor } from '@fastify/error'

/** An error class of `code`; `message` is a `util.format` string of the arguments `A`. */
function usageError<C extends string, A extends unknown[] = []> (code: C, message: string): FastifyErrorConstructor<{ code: C, statusCode: 500 }, A> {
  return createError<C, 500, A>(code, message, 500)
}

/** `fastify.forwardProxy.addTransform` called once the server is ready (transforms are fixed then). */
export const TransformAfterReadyError = usageError('FFP_ERR_TRANSFORM_AFTER_READY', 'fastify-forward-proxy: addTransform must be called before the server is ready')

/** tlsInterception registered where no forwardProxy is. */
export const InterceptionWithoutProxyError = usageError('FFP_ERR_INTERCEPTION_WITHOUT_PROXY', 'fastify-forward-proxy: register forwardProxy before tlsInterception')

/** tlsInterception registered a second time for the same proxy. */
export const InterceptionRegisteredTwiceError = usageError('FFP_ERR_INTERCEPTION_REGISTERED_TWICE', 'fastify-forward-proxy: tlsInterception is already registered for this proxy')

/** tlsInterception registered in another plugin context than forwardProxy. */
export const InterceptionOtherContextError = usageError('FFP_ERR_INTERCEPTION_OTHER_CONTEXT', 'fastify-forward-proxy: register tlsInterception in the same plugin context as forwardProxy')

/** A hook set `request.tunnelMode` to `'intercept'` for a proxy without tlsInterception. */
export const InterceptionNotRegisteredError = usageError('FFP_ERR_INTERCEPTION_NOT_REGISTERED', 'request.tunnelMode is \'intercept\' but tlsInterception is not registered')

/** A route declared the proxy route's constraint with another value than the proxy's own. */
export const InvalidProxyConstraintError = usageError<'FFP_ERR_INVALID_PROXY_CONSTRAINT', [constraint: string, value: string]>('FFP_ERR_INVALID_PROXY_CONSTRAINT', '%s constraint only takes "%s"')

/** `attachServer` or `addOwnListener` given something that is not a Node server. */
export const NotAServerError = usageError<'FFP_ERR_NOT_A_SERVER', [method: string]>('FFP_ERR_NOT_A_SERVER', 'fastify-forward-proxy: %s takes a Node HTTP, HTTPS or HTTP/2 server (one with address() and on())')

/** `reconfigure` or `attachServer` called once the application is closing or closed. */
export const ProxyClosedError = usageError<'FFP_ERR_PROXY_CLOSED', [method: string]>('FFP_ERR_PROXY_CLOSED', 'fastify-forward-proxy: %s cannot be called once the application is closing')

/** forwardProxy registered in a plugin context with a route prefix: it would serve only paths under it. */
export const ProxyUnderPrefixError = usageError<'FFP_ERR_PROXY_UNDER_PREFIX', [prefix: string]>('FFP_ERR_PROXY_UNDER_PREFIX', 'fastify-forward-proxy: register forwardProxy outside any route prefix (here "%s"): a proxy serves every target, not paths under a prefix')

type CodeOf<E extends new (...args: never[]) => { code: string }> = InstanceType<E>['code']

/** The code of an error of this file. */
export type UsageErrorCode =
  | CodeOf<typeof TransformAfterReadyError>
  | CodeOf<typeof InterceptionWithoutProxyError>
  | CodeOf<typeof InterceptionRegisteredTwiceError>
  | CodeOf<typeof InterceptionOtherContextError>
  | CodeOf<typeof InterceptionNotRegisteredError>
  | CodeOf<typeof InvalidProxyConstraintError>
  | CodeOf<typeof NotAServerError>
  | CodeOf<typeof ProxyClosedError>
  | CodeOf<typeof ProxyUnderPrefixError>

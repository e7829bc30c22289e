import basicAuth from '@fastify/basic-auth'
import type { FastifyInstance, onRequestHookHandler } from 'fastify'
import type { ForwardProxyCredentialCheck, ForwardProxyUser } from '../../types/user'
import { ProxyError } from '../diagnostics/proxy-error'
import { AuthFailureLimiter, type AuthFailureLimitSettings } from './auth-failure-limit'

/** The `Proxy-Authenticate` challenge for a realm. */
export function proxyAuthenticateChallenge (realm: string): string {
  return `Basic realm="${realm}", charset="UTF-8"`
}

/**
 * Registers @fastify/basic-auth in proxy mode (`Proxy-Authorization`, 407) on `instance` and
 * returns its hook. A passing check sets `request.proxyUser`; any failure, including a
 * malformed header or a check that throws, ends in a 407 answered by the proxy error handler.
 * With a `failureLimit`, a client address that sent too many wrong credentials gets 429 for
 * the rest of its window, without its credentials being checked; its checks wait their turn so
 * that simultaneous attempts cannot overrun the limit.
 */
export async function registerProxyAuthentication (
  instance: FastifyInstance,
  realm: string,
  check: ForwardProxyCredentialCheck,
  failureLimit: AuthFailureLimitSettings | null
): Promise<onRequestHookHandler> {
  const limiter = failureLimit === null ? null : new AuthFailureLimiter(failureLimit)
  await instance.register(basicAuth, {
    proxyMode: true,
    authenticate: { realm },
    async validate (username, password, request) {
      // The TCP peer, never a forwarded-for header the client could write itself.
      const client = request.raw.socket.remoteAddress ?? ''
      if (limiter !== null && !await limiter.admit(client)) {
        throw new ProxyError('http_request_denied', 'Too many failed proxy authentication attempts.', { status: 429, details: 'too many failed authentication attempts' })
      }
      let verdict: boolean | ForwardProxyUser
      try {
        verdict = await check(username, password, request)
      } catch (error) {
        // Answered with 407 but, as an error of the check rather than a guess, not counted.
        limiter?.settle(client, false)
        throw error
      }
      limiter?.settle(client, verdict === false)
      if (verdict === false) {
        throw new ProxyError('proxy_authentication_required', 'Proxy authentication failed.', { details: 'invalid credentials' })
      }
      request.proxyUser = verdict === true ? { name: username } : verdict
    }
  })
  return instance.basicAuth
}

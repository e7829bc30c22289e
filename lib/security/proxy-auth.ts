import basicAuth from '@fastify/basic-auth'
import type { FastifyInstance, onRequestHookHandler } from 'fastify'
import type { ForwardProxyCredentialCheck } from '../../types/user'
import { ProxyError } from '../diagnostics/proxy-error'
import { AuthFailureLimiter, type AuthFailureLimitSettings } from './auth-failure-limit'
import { SerialChecks } from './serial-checks'

/** The `Proxy-Authenticate` challenge for a realm. */
export function proxyAuthenticateChallenge (realm: string): string {
  return `Basic realm="${realm}", charset="UTF-8"`
}

/**
 * Registers @fastify/basic-auth in proxy mode (`Proxy-Authorization`, 407) on `instance` and
 * returns its hook. A passing check sets `request.proxyUser`; any failure, including a
 * malformed header or a check that throws, ends in a 407 answered by the proxy error handler.
 * With a `failureLimit`, a client address that sent too many wrong credentials gets 429 for
 * the rest of its window, without its credentials being checked; the checks of pipelined
 * HTTP/1.1 requests run one after another, so each sees the failures of those before it.
 */
export async function registerProxyAuthentication (
  instance: FastifyInstance,
  realm: string,
  check: ForwardProxyCredentialCheck,
  failureLimit: AuthFailureLimitSettings | null
): Promise<onRequestHookHandler> {
  const limiter = failureLimit === null ? null : new AuthFailureLimiter(failureLimit)
  const serial = new SerialChecks()
  await instance.register(basicAuth, {
    proxyMode: true,
    authenticate: { realm },
    async validate (username, password, request) {
      const attempt = async (): Promise<void> => {
        // The TCP peer, never a forwarded-for header the client could write itself.
        const client = request.raw.socket.remoteAddress ?? ''
        if (limiter?.isLocked(client) === true) {
          throw new ProxyError('http_request_denied', 'Too many failed proxy authentication attempts.', { status: 429, details: 'too many failed authentication attempts' })
        }
        const verdict = await check(username, password, request)
        if (verdict === false) {
          limiter?.recordFailure(client)
          throw new ProxyError('proxy_authentication_required', 'Proxy authentication failed.', { details: 'invalid credentials' })
        }
        request.proxyUser = verdict === true ? { name: username } : verdict
      }
      // HTTP/2 streams arrive one by one; HTTP/1.1 pipelined requests all at once.
      if (limiter === null || request.raw.httpVersionMajor !== 1) return await attempt()
      return await serial.run(request.raw.socket, attempt)
    }
  })
  return instance.basicAuth
}

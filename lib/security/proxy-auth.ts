import basicAuth from '@fastify/basic-auth'
import type { FastifyInstance, onRequestHookHandler } from 'fastify'
import type { ForwardProxyCredentialCheck } from '../../types/user'
import { ProxyError } from '../diagnostics/proxy-error'

/** The `Proxy-Authenticate` challenge for a realm. */
export function proxyAuthenticateChallenge (realm: string): string {
  return `Basic realm="${realm}", charset="UTF-8"`
}

/**
 * Registers @fastify/basic-auth in proxy mode (`Proxy-Authorization`, 407) on `instance` and
 * returns its hook. A passing check sets `request.proxyUser`; any failure, including a
 * malformed header or a check that throws, ends in a 407 answered by the proxy error handler.
 */
export async function registerProxyAuthentication (instance: FastifyInstance, realm: string, check: ForwardProxyCredentialCheck): Promise<onRequestHookHandler> {
  await instance.register(basicAuth, {
    proxyMode: true,
    authenticate: { realm },
    async validate (username, password, request) {
      const verdict = await check(username, password, request)
      if (verdict === false) throw new ProxyError('proxy_authentication_required', 'Proxy authentication failed.', { details: 'invalid credentials' })
      request.proxyUser = verdict === true ? { name: username } : verdict
    }
  })
  return instance.basicAuth
}

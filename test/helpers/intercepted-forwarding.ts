import type { Test } from 'tap'
import { ProxyAgent, request } from 'undici'
import type { ForwardProxyOptions, TlsInterceptionOptions } from '../../lib/index'
import { makeInterceptionPki, type InterceptionPki } from './interception-pki'
import { startInterceptingProxy, staticProvider, type InterceptingProxy } from './intercepting-proxy'

/** A proxy intercepting every tunnel, and a client (undici ProxyAgent) trusting only the operator CA. */
export interface InterceptingSetup {
  pki: InterceptionPki
  proxy: InterceptingProxy
  /** GETs `https://127.0.0.1:<port><path>` through an intercepted tunnel. */
  get: (port: number, path?: string, headers?: Record<string, string>) => Promise<{
    status: number
    proxyStatus: string | undefined
    body: string
    headers: Record<string, string | string[] | undefined>
  }>
}

/** Starts a proxy that intercepts every tunnel with the test PKI's leaf. */
export async function interceptEverything (
  t: Test,
  interception: TlsInterceptionOptions = {},
  proxyOptions: ForwardProxyOptions = {}
): Promise<InterceptingSetup> {
  const pki = await makeInterceptionPki(t)
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: proxyOptions,
    interception: { selector: { shouldIntercept: () => true }, certificateProvider: staticProvider(pki), ...interception }
  })
  const agent = new ProxyAgent({ uri: proxy.url, requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())
  return {
    pki,
    proxy,
    async get (port, path = '/', headers = {}) {
      const res = await request(`https://127.0.0.1:${port}${path}`, { dispatcher: agent, headers })
      const proxyStatus = res.headers['proxy-status']
      return { status: res.statusCode, proxyStatus: Array.isArray(proxyStatus) ? proxyStatus.join(', ') : proxyStatus, body: await res.body.text(), headers: res.headers }
    }
  }
}

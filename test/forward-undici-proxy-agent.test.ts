import { test } from 'tap'
import { request, ProxyAgent } from 'undici'
import { startOrigin, startProxy } from './helpers/servers'

interface Echo { method: string, url: string, headers: Record<string, string | undefined>, body: string }

test('clients: undici ProxyAgent with proxyTunnel: false sends absolute-form requests that are forwarded', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  const agent = new ProxyAgent({ uri: proxy.url, proxyTunnel: false })
  t.teardown(() => agent.close())
  for (const path of ['/one?a=1', '/two']) {
    const res = await request(`http://127.0.0.1:${origin.port}${path}`, { dispatcher: agent, method: 'POST', body: `body of ${path}` })
    t.equal(res.statusCode, 200)
    const echo = await res.body.json() as Echo
    t.equal(echo.url, path)
    t.equal(echo.body, `body of ${path}`)
    t.equal(echo.headers.via, '1.1 fastify-forward-proxy', 'forwarded by the proxy, not tunnelled')
    t.equal(res.headers.via, '1.1 fastify-forward-proxy')
  }
})

test('clients: undici ProxyAgent default (CONNECT tunnel) reaches an http:// target too', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  const agent = new ProxyAgent({ uri: proxy.url })
  t.teardown(() => agent.close())
  const res = await request(`http://127.0.0.1:${origin.port}/tunnelled?x=%2F`, { dispatcher: agent, method: 'POST', body: 'through the tunnel' })
  t.equal(res.statusCode, 200)
  const echo = await res.body.json() as Echo
  t.equal(echo.url, '/tunnelled?x=%2F')
  t.equal(echo.body, 'through the tunnel')
  t.equal(echo.headers.via, undefined, 'an opaque tunnel adds nothing')
  t.equal(proxy.app.forwardProxy.activeTunnels, 1, 'the request went through a CONNECT tunnel')
})

import { test } from 'tap'
import { ProxyAgent, request } from 'undici'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'

test('an application hook can answer a request inside an intercepted tunnel itself; the destination is never contacted, and an app route with the same path never serves it', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, {
    interception: interceptAll(pki),
    setup (app) {
      app.get('/local', async () => 'served by the app route')
      app.addHook('onRequest', async (req, reply) => {
        if (req.interception !== null && req.url === '/blocked') return await reply.code(451).header('x-policy', 'hook').send('blocked by policy')
      })
    }
  })
  const agent = new ProxyAgent({ uri: proxy.url, requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())

  const blocked = await request(`https://127.0.0.1:${origin.port}/blocked`, { dispatcher: agent })
  t.equal(blocked.statusCode, 451)
  t.equal(blocked.headers['x-policy'], 'hook')
  t.equal(await blocked.body.text(), 'blocked by policy')

  const local = await request(`https://127.0.0.1:${origin.port}/local`, { dispatcher: agent })
  t.equal(local.statusCode, 200)
  t.not(await local.body.text(), 'served by the app route', 'an in-tunnel request never matches an app route')
  t.same(origin.requests.map((seen) => seen.url), ['/local'])
})

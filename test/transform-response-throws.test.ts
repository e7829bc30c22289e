import { test } from 'tap'
import { request } from 'undici'
import { startOrigin, startProxy } from './helpers/servers'
import { absoluteFormAgent } from './helpers/forward-client'

test('a response transform that throws gets 500 proxy_internal_error and the destination\'s body is discarded', async (t) => {
  const origin = await startOrigin(t, (_req, res) => { res.end('destination body must not leak') })
  const proxy = await startProxy(t, {
    transforms: [{ async transformResponse () { throw new Error('boom') } }]
  })
  const res = await request(`http://127.0.0.1:${origin.port}/`, { dispatcher: absoluteFormAgent(t, proxy.url) })
  t.equal(res.statusCode, 500)
  t.equal(res.headers['proxy-status'], 'fastify-forward-proxy; error=proxy_internal_error; details="response transform threw"')
  t.notMatch(await res.body.text(), /destination body|boom/)
  t.equal(origin.requests.length, 1)
})

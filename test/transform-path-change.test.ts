import { test } from 'tap'
import { request } from 'undici'
import { startProxy, startSentinel } from './helpers/servers'
import { absoluteFormAgent } from './helpers/forward-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('a transform that changes the request target gets 500 proxy_internal_error and nothing is sent', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, {
    transforms: [{ transformRequest (_request, _destination, outgoing) { outgoing.path = '/admin' } }]
  })
  const res = await request(`http://127.0.0.1:${sentinel.port}/public`, { dispatcher: absoluteFormAgent(t, proxy.url) })
  t.equal(res.statusCode, 500)
  t.equal(res.headers['proxy-status'], 'fastify-forward-proxy; error=proxy_internal_error; details="request transform changed the request target"')
  await res.body.dump()
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing was sent')
})

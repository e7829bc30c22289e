import { test } from 'tap'
import { request } from 'undici'
import { startProxy, startSentinel } from './helpers/servers'
import { absoluteFormAgent } from './helpers/forward-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('A transform that changes the method gets 500 proxy_internal_error, since the proxy framed the request and its response for that method', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, {
    transforms: [{ transformRequest (_request, _destination, outgoing) { (outgoing as { method: string }).method = 'DELETE' } }]
  })
  const res = await request(`http://127.0.0.1:${sentinel.port}/`, { dispatcher: absoluteFormAgent(t, proxy.url) })
  t.equal(res.statusCode, 500)
  t.equal(res.headers['proxy-status'], 'fastify-forward-proxy; error=proxy_internal_error; details="request transform changed the method"')
  await res.body.dump()
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing was sent')
})

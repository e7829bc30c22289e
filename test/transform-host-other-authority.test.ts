import { test } from 'tap'
import { request } from 'undici'
import { startProxy, startSentinel } from './helpers/servers'
import { absoluteFormAgent } from './helpers/forward-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

for (const host of ['other.example', '127.0.0.2', 'PORT', '127.0.0.1', '127.0.0.1:1:2']) {
  test(`a transform that sets Host to another authority (${host}) gets 500 proxy_internal_error and nothing is sent`, async (t) => {
    const sentinel = await startSentinel(t)
    // 'PORT' stands for the right host with another port; '127.0.0.1' omits the port, meaning 80.
    const value = host === 'PORT' ? `127.0.0.1:${sentinel.port + 1}` : host
    const proxy = await startProxy(t, {
      transforms: [{ transformRequest (_request, _destination, outgoing) { outgoing.headers.host = value } }]
    })
    const res = await request(`http://127.0.0.1:${sentinel.port}/`, { dispatcher: absoluteFormAgent(t, proxy.url) })
    t.equal(res.statusCode, 500)
    t.equal(res.headers['proxy-status'], 'fastify-forward-proxy; error=proxy_internal_error; details="request transform set a Host for another authority"')
    await res.body.dump()
    await expectNothingDialedBefore(t, sentinel.accepts, 'nothing was sent')
  })
}

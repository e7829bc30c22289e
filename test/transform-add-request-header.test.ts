import { test } from 'tap'
import { request } from 'undici'
import { startOrigin, startProxy } from './helpers/servers'
import { absoluteFormAgent } from './helpers/forward-client'

test('a transform adds a request header on http:// forwarding, without touching the client\'s request headers', async (t) => {
  const origin = await startOrigin(t)
  let clientHeaders: Record<string, unknown> = {}
  const proxy = await startProxy(t, {
    transforms: [{
      transformRequest (request, destination, outgoing) {
        outgoing.headers.authorization = `Bearer injected-for-${destination.host}`
        clientHeaders = { ...request.headers }
      }
    }]
  }, (app) => {
    app.addHook('onResponse', async (request) => { t.equal(request.headers.authorization, undefined, 'the client\'s request object is untouched') })
  })
  const res = await request(`http://127.0.0.1:${origin.port}/x`, { dispatcher: absoluteFormAgent(t, proxy.url) })
  t.equal(res.statusCode, 200)
  await res.body.dump()
  t.equal(origin.requests[0]?.headers.authorization, 'Bearer injected-for-127.0.0.1')
  t.equal(clientHeaders.authorization, undefined)
})

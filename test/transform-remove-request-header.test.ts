import { test } from 'tap'
import { request } from 'undici'
import { startOrigin, startProxy } from './helpers/servers'
import { absoluteFormAgent } from './helpers/forward-client'

test('a transform removes a request header (a client cookie) before the request leaves', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, {
    transforms: [{ transformRequest (_request, _destination, outgoing) { delete outgoing.headers.cookie } }]
  })
  const res = await request(`http://127.0.0.1:${origin.port}/`, {
    dispatcher: absoluteFormAgent(t, proxy.url),
    headers: { cookie: 'session=secret', 'x-other': 'stays' }
  })
  t.equal(res.statusCode, 200)
  await res.body.dump()
  t.equal(origin.requests[0]?.headers.cookie, undefined)
  t.equal(origin.requests[0]?.headers['x-other'], 'stays')
})

import { test } from 'tap'
import { request, ProxyAgent } from 'undici'
import { startOrigin, startProxy } from './helpers/servers'

test('bodies: a POST with application/json and invalid JSON is forwarded untouched, never parsed', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  const agent = new ProxyAgent({ uri: proxy.url, proxyTunnel: false })
  t.teardown(() => agent.close())
  const body = '{"a": 1, "b": [tru'
  const res = await request(`http://127.0.0.1:${origin.port}/json`, {
    dispatcher: agent,
    method: 'POST',
    headers: { 'content-type': 'application/json; charset=utf-8' },
    body
  })
  t.equal(res.statusCode, 200, 'no 400 from a JSON parser')
  await res.body.dump()
  t.equal(origin.requests[0]?.body, body)
  t.equal(origin.requests[0]?.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(origin.requests[0]?.headers['content-length'], String(Buffer.byteLength(body)))
})

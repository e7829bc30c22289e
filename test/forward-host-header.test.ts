import { test } from 'tap'
import { startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'

test('the Host header comes from the target, not from the client', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  const res = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/h HTTP/1.1\r\nHost: other.example\r\nConnection: close\r\n\r\n`)
  t.equal(res.status, 200)
  t.equal(origin.requests.length, 1)
  const seen = origin.requests[0]
  t.equal(seen?.headers.host, `127.0.0.1:${origin.port}`)
  const hostHeaders = (seen?.rawHeaders ?? []).filter((_, i, all) => i % 2 === 0 && all[i]?.toLowerCase() === 'host')
  t.equal(hostHeaders.length, 1, 'exactly one Host header reaches the origin')
  t.notMatch(JSON.stringify(seen?.rawHeaders), /other\.example/)
})

test('a request without a Host header is forwarded with the target authority', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  const res = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/h HTTP/1.0\r\n\r\n`)
  t.equal(res.status, 200)
  t.equal(origin.requests[0]?.headers.host, `127.0.0.1:${origin.port}`)
})

test('an IPv6 literal target is forwarded with the bracketed Host [::1]:port', async (t) => {
  const origin = await startOrigin(t, undefined, '::1')
  const proxy = await startProxy(t)
  const res = await rawExchange(proxy.port, `GET http://[::1]:${origin.port}/v6 HTTP/1.1\r\nHost: other.example\r\nConnection: close\r\n\r\n`)
  t.equal(res.status, 200)
  t.equal(origin.requests[0]?.url, '/v6')
  t.equal(origin.requests[0]?.headers.host, `[::1]:${origin.port}`)
})

test('a named target keeps its name in Host; the resolver only picks the address', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { resolver: async () => [{ address: '127.0.0.1', family: 4 }] })
  const res = await rawExchange(proxy.port, `GET http://WWW.Web.Test.:${origin.port}/n HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`)
  t.equal(res.status, 200)
  t.equal(origin.requests[0]?.headers.host, `www.web.test:${origin.port}`, 'canonical name from the target')
})

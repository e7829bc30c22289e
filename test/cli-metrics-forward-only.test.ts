import { test } from 'tap'
import { request } from 'undici'
import { LOOPBACK_ORIGINS, portOf, startConfiguredServer } from './helpers/cli-server'
import { startOrigin } from './helpers/servers'
import { basic, rawExchange } from './helpers/raw-client'

test('server: after only http:// forwarding, GET /metrics shows it: forward_proxy_requests_total{forward_proxy_kind="forward"} and its outcomes', async (t) => {
  const origin = await startOrigin(t)
  const server = await startConfiguredServer(t, {
    listen: [{ host: '127.0.0.1', port: 0 }],
    users: { alice: 's3cret' },
    destinations: LOOPBACK_ORIGINS,
    metrics: { port: 0 }
  })
  const proxyPort = portOf(server.urls[0])
  const get = (headers: string): Promise<{ status: number }> =>
    rawExchange(proxyPort, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\n${headers}Connection: close\r\n\r\n`)
  t.equal((await get(`Proxy-Authorization: ${basic('alice', 's3cret')}\r\n`)).status, 200)
  t.equal((await get(`Proxy-Authorization: ${basic('alice', 's3cret')}\r\n`)).status, 200)
  t.equal((await get('')).status, 407)

  const scrape = await request(server.metricsUrl ?? '')
  t.equal(scrape.statusCode, 200)
  const text = await scrape.body.text()
  t.match(text, /\nforward_proxy_requests_total\{forward_proxy_kind="forward"\} 3\n/)
  t.match(text, /\nforward_proxy_request_outcomes_total\{forward_proxy_kind="forward",forward_proxy_outcome="answered"\} 2\n/)
  t.match(text, /\nforward_proxy_request_outcomes_total\{forward_proxy_kind="forward",forward_proxy_outcome="refused",forward_proxy_reason="auth"\} 1\n/)
  t.notMatch(text, /forward_proxy_kind="connect"/, 'no CONNECT was made')
})

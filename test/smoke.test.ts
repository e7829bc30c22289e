import { test } from 'tap'
import { request, ProxyAgent } from 'undici'
import { startOrigin, startProxy } from './helpers/servers'
import { openTunnel, rawExchange } from './helpers/raw-client'

test('smoke: forward GET through undici ProxyAgent', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  const agent = new ProxyAgent({ uri: proxy.url, proxyTunnel: false })
  t.teardown(() => agent.close())
  const res = await request(`http://127.0.0.1:${origin.port}/b?x=%2F`, { dispatcher: agent })
  t.equal(res.statusCode, 200)
  const body = await res.body.json() as { url: string, headers: Record<string, string> }
  t.equal(body.url, '/b?x=%2F')
  t.match(body.headers.via, /1\.1 fastify-forward-proxy/)
})

test('smoke: CONNECT tunnel', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${origin.port}`)
  t.equal(tunnel.status, 200)
  tunnel.socket.write('GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')
  const text = await new Promise<string>((resolve) => { let d = ''; tunnel.socket.on('data', (c) => { d += c }); tunnel.socket.on('close', () => resolve(d)) })
  t.match(text, /HTTP\/1\.1 200/)
  t.match(text, /"url":"\/x"/)
})

test('smoke: absolute https gets 400', async (t) => {
  const proxy = await startProxy(t)
  const res = await rawExchange(proxy.port, 'GET https://example.com/ HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n')
  t.equal(res.status, 400)
  t.match(res.text, /proxy-status: fastify-forward-proxy; error=http_request_error/i)
})

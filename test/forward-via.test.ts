import { test } from 'tap'
import { request, ProxyAgent } from 'undici'
import { startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'

const OUR_VIA = '1.1 fastify-forward-proxy'

test('Via is added to the forwarded request and to the response, after existing entries', async (t) => {
  const origin = await startOrigin(t, (_req, res) => {
    res.setHeader('via', '1.1 origin-cache')
    res.end('ok')
  })
  const proxy = await startProxy(t)
  const agent = new ProxyAgent({ uri: proxy.url, proxyTunnel: false })
  t.teardown(() => agent.close())
  const res = await request(`http://127.0.0.1:${origin.port}/`, { dispatcher: agent, headers: { via: '1.0 client-side' } })
  t.equal(await res.body.text(), 'ok')
  t.equal(origin.requests[0]?.headers.via, `1.0 client-side, ${OUR_VIA}`)
  const responseVia = res.headers.via
  t.equal(Array.isArray(responseVia) ? responseVia.join(', ') : responseVia, `1.1 origin-cache, ${OUR_VIA}`)
})

test('Connection: close, Via, X-Injected cannot strip the Via the proxy adds', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  const head = [
    `GET http://127.0.0.1:${origin.port}/ HTTP/1.1`,
    'Host: x',
    'Connection: close, Via, X-Injected',
    'Via: 1.0 spoofed',
    'X-Injected: yes'
  ]
  const res = await rawExchange(proxy.port, `${head.join('\r\n')}\r\n\r\n`)
  t.equal(res.status, 200)
  const seen = origin.requests[0]
  t.equal(seen?.headers.via, OUR_VIA, 'only our Via reaches the origin')
  t.equal(seen?.headers['x-injected'], undefined)
  t.match(res.text, /\r\nvia: 1\.1 fastify-forward-proxy\r\n/i)
})

import { test } from 'tap'
import { startProxy, startSentinel } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'

test('non-CONNECT traffic reaches the application unchanged on the port that also opens tunnels', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, {}, (app) => {
    app.get('/healthz', async () => ({ status: 'ok' }))
    app.post('/items', async (request) => ({ received: request.body, tag: request.headers['x-tag'], url: request.url }))
  })
  const health = await fetch(`${proxy.url}/healthz`)
  t.equal(health.status, 200)
  t.same(await health.json(), { status: 'ok' })
  t.equal(health.headers.get('proxy-status'), null, 'the app answered, not the proxy')
  t.equal(health.headers.get('via'), null)

  const posted = await fetch(`${proxy.url}/items?x=1`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-tag': 'kept' }, body: JSON.stringify({ a: 1 }) })
  t.same(await posted.json(), { received: { a: 1 }, tag: 'kept', url: '/items?x=1' }, 'body parsed by the app, headers and URL as sent')

  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${sentinel.port}`)
  t.equal(tunnel.status, 200, 'the same port still opens tunnels')
  tunnel.socket.destroy()
})

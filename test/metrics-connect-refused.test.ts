import { test } from 'tap'
import { installMetrics } from './helpers/metric-reader'
import { startProxy, startSentinel } from './helpers/servers'
import { basic, openTunnel, rawExchange } from './helpers/raw-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const CONNECT_ONLY = [{ value: 1, attributes: { 'forward_proxy.kind': 'connect' } }]

test('a CONNECT refused by the destination policy (403) is counted with forward_proxy.kind=connect', async (t) => {
  const installed = installMetrics(t)
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, { destinations: { allowedPorts: [443] } })
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${sentinel.port}`)
  tunnel.socket.destroy()
  t.equal(tunnel.status, 403)
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing was dialed')
  t.strictSame((await installed.collect('forward_proxy.requests'))?.points, CONNECT_ONLY)
})

test('a CONNECT answered 407 (no credentials) is counted with forward_proxy.kind=connect', async (t) => {
  const installed = installMetrics(t)
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } } })
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${sentinel.port}`)
  tunnel.socket.destroy()
  t.equal(tunnel.status, 407)
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing was dialed')
  t.strictSame((await installed.collect('forward_proxy.requests'))?.points, CONNECT_ONLY)

  const retried = await openTunnel(proxy.port, `127.0.0.1:${sentinel.port}`, { 'Proxy-Authorization': basic('alice', 's3cret') })
  t.teardown(() => retried.socket.destroy())
  t.equal(retried.status, 200)
  t.strictSame((await installed.collect('forward_proxy.requests'))?.points, [{ value: 2, attributes: { 'forward_proxy.kind': 'connect' } }],
    'the retry with credentials is a second CONNECT request')
})

test('a CONNECT answered by an application hook, and one refused 501 after another request on its connection, are counted', async (t) => {
  const installed = installMetrics(t)
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, {}, (app) => {
    app.get('/own', async () => 'own')
    app.addHook('onRequest', async (request, reply) => {
      if (request.method === 'CONNECT' && request.headers['x-refuse'] !== undefined) await reply.code(429).send('later')
    })
  })
  const refused = await openTunnel(proxy.port, `127.0.0.1:${sentinel.port}`, { 'X-Refuse': '1' })
  refused.socket.destroy()
  t.equal(refused.status, 429)

  const pipelined = await rawExchange(proxy.port, `GET /own HTTP/1.1\r\nHost: x\r\n\r\nCONNECT 127.0.0.1:${sentinel.port} HTTP/1.1\r\nHost: x\r\n\r\n`)
  t.match(pipelined.text, /^HTTP\/1\.1 200 [^]*HTTP\/1\.1 501 /)
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing was dialed')
  t.strictSame((await installed.collect('forward_proxy.requests'))?.points, [{ value: 2, attributes: { 'forward_proxy.kind': 'connect' } }])
})
